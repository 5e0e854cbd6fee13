#!/usr/bin/env bash
# Compare several models on one prepared dataset under one budget: every model trains the same number
# of updates with the same seed, optimizer, schedule and batches, is validated every VALID_INTERVAL
# updates (the learning curve), decodes the test set with the same settings from its last checkpoint
# (same budget for all: no checkpoint selection), and is scored with fairseq-sum-score (ROUGE F1 with
# 95% bootstrap CIs; METEOR when fairseq-sum-score offers --meteor; a paired significance test of each
# model against the first when the console script fairseq-sum-compare is installed), and measured
# for whether it reads its source at all (analysis/source_use.py: source gain, distinct summaries). Writes
# OUT/results.md (table, commands, hardware, wall times) and OUT/learning_curve.png.
#
#   bash recipes/compare.sh WORK OUT "LABEL=ARCH [fairseq-train flags]" ...
#     WORK   a folder prepared by fairseq-sum-prepare (WORK/bin/prepare_args.json)
#     OUT    output folder (checkpoints, decodings, scores, report)
#     spec   one per model; the first is the baseline of the significance tests. A spec with
#            "--side-data theta" gets the Topic Assistant's topic model fitted on WORK first (TOPICS
#            topics, over the untruncated documents of WORK/spm_full when prepare wrote them) and
#            decodes with the same side data.
#
# Environment: NGPU (1; see gpu_setup in common.sh), MAX_UPDATE (200), SEED (1), VALID_INTERVAL (MAX_UPDATE / 5), MAX_TOKENS (4000),
# LR (2e-3), WARMUP (50), BEAM (1), MIN_LEN (0), MAX_LEN_B (prepare's max target pieces), LENPEN
# (1.0), NO_REPEAT (3), GEN_BATCH (25), TOPICS (64), TRAIN_EXTRA / GEN_EXTRA (flags for every model).
# Steps are skipped when their output exists (common.sh), so a re-run resumes.
source "$(dirname "$0")/common.sh"
USAGE='usage: compare.sh WORK OUT "LABEL=ARCH [flags]" ...'
WORK=${1:?$USAGE}
OUT=${2:?$USAGE}
shift 2
[ $# -ge 1 ] || { echo "$USAGE" >&2; exit 2; }
[ -f "$WORK/bin/prepare_args.json" ] || { echo "compare.sh: $WORK/bin/prepare_args.json missing (run fairseq-sum-prepare)" >&2; exit 2; }
MAX_UPDATE=${MAX_UPDATE:-200}
SEED=${SEED:-1}
VALID_INTERVAL=${VALID_INTERVAL:-$(( MAX_UPDATE / 5 > 0 ? MAX_UPDATE / 5 : 1 ))}
MAX_TOKENS=${MAX_TOKENS:-4000}
LR=${LR:-2e-3}
WARMUP=${WARMUP:-50}
BEAM=${BEAM:-1}
MIN_LEN=${MIN_LEN:-0}
LENPEN=${LENPEN:-1.0}
NO_REPEAT=${NO_REPEAT:-3}
GEN_BATCH=${GEN_BATCH:-25}
TOPICS=${TOPICS:-64}
read -r MAX_SRC MAX_TGT < <(python -c "import json,sys; o=json.load(open(sys.argv[1]))['options']; print(o['max_src_tokens'], o['max_tgt_tokens'])" "$WORK/bin/prepare_args.json")
MAX_LEN_B=${MAX_LEN_B:-$MAX_TGT}
mkdir -p "$OUT"
gpu_setup 1  # NGPU workers (1) share each update's batches (--update-freq 1 unless UPDATE_FREQ is set)

METEOR_FLAG=$(fairseq-sum-score --help 2>/dev/null | grep -q -- '--meteor' && echo --meteor || true)
TRAIN_FLAGS=(--optimizer adam --adam-betas '(0.9, 0.98)' --lr "$LR" --lr-scheduler inverse_sqrt
  --warmup-updates "$WARMUP" --label-smoothing 0.1 --dropout 0.1 --clip-norm 1.0 --max-tokens "$MAX_TOKENS"
  --max-source-positions $((MAX_SRC + 8)) --max-target-positions $((MAX_TGT + 16)) --max-update "$MAX_UPDATE"
  --seed "$SEED" --validate-interval 1000000 --validate-interval-updates "$VALID_INTERVAL"
  --save-interval 1000000 --save-interval-updates "$VALID_INTERVAL" --keep-interval-updates 1
  --no-epoch-checkpoints --log-interval 5 --num-workers 0 --update-freq "$UPDATE_FREQ" "${DIST_FLAGS[@]}")
GEN_FLAGS=(--gen-subset test --beam "$BEAM" --batch-size "$GEN_BATCH" --min-len "$MIN_LEN" --max-len-a 0
  --max-len-b "$MAX_LEN_B" --lenpen "$LENPEN" --no-repeat-ngram-size "$NO_REPEAT" --seed "$SEED")

# fit_topics: the topic model and theta of every split, once per WORK (the Topic Assistant's side data)
fit_topics() {
  if [ -f "$WORK/bin/test.theta.npy" ]; then log "topic model: $WORK/bin/test.theta.npy exists, skipped"; return; fi
  log "topic model: K=$TOPICS on $WORK/bin"
  python -m preprocess.topic_model fit "$WORK/bin" --topics "$TOPICS" \
    $([ -d "$WORK/spm_full" ] && echo --full-src "$WORK/spm_full")
}

{
  echo "# compare.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "work=$WORK max_update=$MAX_UPDATE seed=$SEED valid_interval=$VALID_INTERVAL max_tokens=$MAX_TOKENS lr=$LR warmup=$WARMUP"
  echo "beam=$BEAM min_len=$MIN_LEN max_len_b=$MAX_LEN_B lenpen=$LENPEN no_repeat=$NO_REPEAT meteor=${METEOR_FLAG:-no}"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | xargs) cores=$(getconf _NPROCESSORS_ONLN) OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset} load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
  echo "gpu=$(python -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")')"
} > "$OUT/run_info.txt"

LABELS=()
for spec in "$@"; do
  label=${spec%%=*}
  rest=${spec#*=}
  read -r -a words <<< "$rest"
  arch=${words[0]}
  flags=("${words[@]:1}")
  [[ "$label" =~ ^[A-Za-z0-9_.+-]+$ ]] || { echo "compare.sh: bad label '$label' in '$spec'" >&2; exit 2; }
  side=()
  for ((i = 0; i < ${#flags[@]}; i++)); do
    [ "${flags[$i]}" = --side-data ] && side=(--side-data "${flags[$((i + 1))]}")
  done
  [[ " ${side[*]:-} " == *theta* ]] && fit_topics
  LABELS+=("$label")
  start=$(date +%s)
  # shellcheck disable=SC2086
  train "$WORK/bin" "$OUT/$label/checkpoints" --arch "$arch" "${TRAIN_FLAGS[@]}" "${flags[@]}" ${TRAIN_EXTRA:-}
  mid=$(date +%s)
  # shellcheck disable=SC2086
  generate "$WORK/bin" "$OUT/$label/checkpoints/checkpoint_last.pt" "$OUT/$label/test.out" \
    "${GEN_FLAGS[@]}" "${side[@]}" ${GEN_EXTRA:-}
  end=$(date +%s)
  # shellcheck disable=SC2086
  score "$OUT/$label/test.out" $METEOR_FLAG
  # does the model read its source? (source gain and distinct summaries: analysis/source_use.py)
  if [ ! -s "$OUT/$label/source_use.json" ]; then
    python -m fairseq_sum_plugins.analysis.source_use "$WORK/bin" --path "$OUT/$label/checkpoints/checkpoint_last.pt" \
      --subset test --generate-output "$OUT/$label/test.out" --json "$OUT/$label/source_use.json" "${side[@]}"
  fi
  # wall seconds of this launch's train and generate steps (a skipped step takes ~0 s: the first
  # launch's figures are kept)
  [ -s "$OUT/$label/wall.txt" ] || echo "train_s=$((mid - start)) generate_s=$((end - mid))" > "$OUT/$label/wall.txt"
  printf '%s\n' "$label=$rest" > "$OUT/$label/spec.txt"
done

if command -v fairseq-sum-compare > /dev/null && [ ${#LABELS[@]} -gt 1 ]; then
  for label in "${LABELS[@]:1}"; do
    log "significance: ${LABELS[0]} vs $label"
    fairseq-sum-compare "$OUT/${LABELS[0]}/test.out" "$OUT/$label/test.out" > "$OUT/$label/vs_${LABELS[0]}.txt" 2>&1 \
      || log "fairseq-sum-compare failed: see $OUT/$label/vs_${LABELS[0]}.txt"
  done
fi
python -m fairseq_sum_plugins.analysis.compare_report "$OUT" "${LABELS[@]}"
