#!/usr/bin/env bash
# Compare several models on one prepared dataset under one budget: every model trains the same number
# of updates with the same seed, optimizer, schedule and batches, is validated every VALID_INTERVAL
# updates (the learning curve), decodes the test set with the same settings from its last checkpoint
# (same budget for all: no checkpoint selection), and is scored with fairseq-sum-score (ROUGE F1 with
# 95% bootstrap CIs; METEOR when fairseq-sum-score offers --meteor; a paired significance test of each
# model against the first when the console script fairseq-sum-compare is installed), and measured
# for whether it reads its source at all (inspection/source_use.py: source gain, distinct summaries).
# Writes OUT/results.md (table, commands, hardware, wall times) and OUT/learning_curve.png. The
# baselines of the same test set (fairseq-sum-baselines: Lead-1/3/k, random3, the oracle, the
# generic summary, the bag of pieces; OUT/baselines.json) and each model's verdict "specific to its
# document" (the one-sided lower bound of its ROUGE-2 specificity, fairseq-sum-score --specificity,
# above half the mean of 20 random extracts'; test NLL against the bag of pieces; source gain), with
# its paired bootstrap against Lead-3 beside its difference from the first model,
# go to OUT/baselines.md, OUT/verdicts.json and a section of OUT/results.md
# (evaluation/baseline_table.py).
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
# (1.0), NO_REPEAT (3), GEN_BATCH (25), TOPICS (64), TRAIN_EXTRA / GEN_EXTRA (flags for every model),
# COPY (1: every sum_transformer model gets --pointer-generator True unless its spec sets
# --pointer-generator; 0: none), CURVES (0; 1: keep every interval checkpoint and plot each model's
# source gain over updates, OUT/source_gain.png and .json, inspection/source_curve.py).
# COPY=1 is the default because small transformers trained briefly on CPU do not read their
# documents without a copy mechanism (results/README.md, "Which transformers read their documents");
# Mem2Mem/HRED carry their own pointer-generator (on by default) and BART has none.
# Every number must be an integer in its range (LR, LENPEN: a number), or nothing runs.
# Steps are skipped when their output exists under the same spec (common.sh step_gate), so a re-run resumes. Each run records its
# spec in OUT/LABEL/run_spec.txt (model and flags, every variable above, the workers, WORK/bin's
# identity); a re-run whose spec differs is refused, naming the differences, before any work (only the
# decoding's settings may change while OUT/LABEL holds no finished decoding). A label names a folder of
# OUT: letters, digits, _ . + - (not first: . -), each label once.
source "$(dirname "$0")/common.sh"
USAGE='usage: compare.sh WORK OUT "LABEL=ARCH [flags]" ...'
WORK=${1:?$USAGE}
OUT=${2:?$USAGE}
shift 2
[ $# -ge 1 ] || { echo "$USAGE" >&2; exit 2; }
[ -f "$WORK/bin/prepare_args.json" ] || { echo "compare.sh: $WORK/bin/prepare_args.json missing (run fairseq-sum-prepare)" >&2; exit 2; }
refuse() { echo "compare.sh: $1" >&2; shift; [ $# -eq 0 ] || printf '%s\n' "$@" >&2; exit 2; }  # MESSAGE [LINES]
# model_of ARCH: the fairseq model family of an architecture name (empty when unknown)
model_of() {
  python -c 'import sys, fairseq_sum_plugins; from fairseq.models import ARCH_MODEL_NAME_REGISTRY as R; print(R.get(sys.argv[1], ""))' "$1" 2>/dev/null
}
MAX_UPDATE=${MAX_UPDATE:-200}
require_int MAX_UPDATE 1
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
COPY=${COPY:-1}
CURVES=${CURVES:-0}
for v in COPY CURVES; do require_int "$v" 0 1; done
for v in SEED MIN_LEN NO_REPEAT; do require_int "$v" 0; done
for v in VALID_INTERVAL MAX_TOKENS WARMUP BEAM GEN_BATCH TOPICS; do require_int "$v" 1; done
require_number LR positive
require_number LENPEN
# WORK/bin's maximum lengths, checked in Python before the shell sees them (prepare_args.json is data),
# and its identity: a hash of its dictionaries, index files, binary file sizes and prepare options
# (paths and worker counts left out: a moved folder holds the same data)
DATA_INFO=$(python - "$WORK/bin" <<'EOF'
import hashlib, json, os, sys
folder = sys.argv[1]
path = os.path.join(folder, "prepare_args.json")
keys = ("max_src_tokens", "max_tgt_tokens")
try:
    with open(path, encoding="utf-8") as f:
        options = json.load(f)["options"]
    lengths = [options[key] for key in keys]
except (OSError, ValueError, KeyError, TypeError, IndexError) as err:
    sys.exit(f"compare.sh: {path}: cannot read options.max_src_tokens / max_tgt_tokens ({type(err).__name__}: "
             f"{err}); re-run fairseq-sum-prepare")
for key, value in zip(keys, lengths):
    if type(value) is not int or not 1 <= value <= 10**9:
        sys.exit(f"compare.sh: {path}: options.{key} = {value!r} is not a positive integer; re-run fairseq-sum-prepare")
ident = hashlib.sha256(json.dumps({k: v for k, v in options.items()
                                   if k not in ("out", "jsonl_dir", "parallel_dir", "workers", "num_threads")},
                                  sort_keys=True, default=str).encode())
for name in sorted(os.listdir(folder)):
    full = os.path.join(folder, name)
    if name.endswith(".idx") or (name.startswith("dict.") and name.endswith(".txt")):
        with open(full, "rb") as f:
            ident.update(name.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    elif name.endswith(".bin"):
        ident.update(f"{name}\0{os.path.getsize(full)}".encode())
print(*lengths, ident.hexdigest()[:16])
EOF
) || exit 2
read -r MAX_SRC MAX_TGT DATA_ID <<< "$DATA_INFO"
require_int MAX_SRC 1
require_int MAX_TGT 1
MAX_LEN_B=${MAX_LEN_B:-$MAX_TGT}
require_int MAX_LEN_B 1
gpu_setup 1  # NGPU workers (1) share each update's batches (--update-freq 1 unless UPDATE_FREQ is set)

TRAIN_FLAGS=(--optimizer adam --adam-betas '(0.9, 0.98)' --lr "$LR" --lr-scheduler inverse_sqrt
  --warmup-updates "$WARMUP" --label-smoothing 0.1 --dropout 0.1 --clip-norm 1.0 --max-tokens "$MAX_TOKENS"
  --max-source-positions $((MAX_SRC + 8)) --max-target-positions $((MAX_TGT + 16)) --max-update "$MAX_UPDATE"
  --seed "$SEED" --validate-interval 1000000 --validate-interval-updates "$VALID_INTERVAL"
  --save-interval 1000000 --save-interval-updates "$VALID_INTERVAL" --keep-interval-updates $((CURVES ? -1 : 1))
  --no-epoch-checkpoints --log-interval 5 --num-workers 0 --update-freq "$UPDATE_FREQ")
GEN_FLAGS=(--gen-subset test --beam "$BEAM" --batch-size "$GEN_BATCH" --min-len "$MIN_LEN" --max-len-a 0
  --max-len-b "$MAX_LEN_B" --lenpen "$LENPEN" --no-repeat-ngram-size "$NO_REPEAT" --seed "$SEED")

# check_topics: WORK's topic model, when fitted, has TOPICS topics (its theta serves every run on WORK)
check_topics() {
  [ -f "$WORK/bin/test.theta.npy" ] || return 0
  python - "$WORK/bin/test.theta.npy" "$TOPICS" <<'EOF' || exit 2
import sys
import numpy
path, topics = sys.argv[1], int(sys.argv[2])
shape = numpy.load(path, mmap_mode="r").shape
if len(shape) != 2 or shape[1] != topics:
    sys.exit(f"compare.sh: {path} holds theta of shape {shape}, not {topics} topics (TOPICS): set TOPICS to "
             "the fitted topic model's, or use another WORK")
EOF
}

# fit_topics: the topic model and theta of every split, once per WORK (the Topic Assistant's side data)
fit_topics() {
  if ! step_gate "topic model" "$WORK/bin/topic_model.npz" "$([ -f "$WORK/bin/topic_model.npz" ] && [ -f "$WORK/bin/test.theta.npy" ] && echo 1 || echo 0)" \
    --input "data=$WORK/bin" -- --topics "$TOPICS"; then
    log "topic model: $WORK/bin/test.theta.npy exists, skipped"; return
  fi
  log "topic model: K=$TOPICS on $WORK/bin"
  python -m preprocess.topic_model fit "$WORK/bin" --topics "$TOPICS" \
    $([ -d "$WORK/spm_full" ] && echo --full-src "$WORK/spm_full")
}

# sets_copy FLAG...: true when one of the flags sets the copy mechanism, either way and in any
# spelling: --pointer-generator VALUE, --pointer-generator=VALUE (False, 0, false, no, ...), the
# flag quoted ('--pointer-generator=False', "--pointer-generator" 0). COPY=1 leaves such a spec as
# it is: fairseq reads the last of two --pointer-generator flags, so an appended one would override
# the spec's.
sets_copy() {
  local f
  for f in "$@"; do
    f=${f#[\'\"]}
    f=${f%%[\'\"]*}
    [[ $f == --pointer-generator || $f == --pointer-generator=* ]] && return 0
  done
  return 1
}

# run_spec LABEL=REST [SIDE FLAGS]: what shapes a run's checkpoint (train.*) and its decoding (decode.*),
# KEY=VALUE a line; the workers, not their ranks (every node of a multi-node run writes the same spec)
run_spec() {
  local spec=$1 v; shift
  echo "train.model=${spec#*=}"
  echo "train.data=$DATA_ID (WORK/bin: dictionaries, indices, prepare options)"
  for v in MAX_UPDATE SEED VALID_INTERVAL MAX_TOKENS LR WARMUP WORLD UPDATE_FREQ; do echo "train.$v=${!v}"; done
  echo "train.TRAIN_EXTRA=${TRAIN_EXTRA:-}"
  [[ " $* " != *" theta "* ]] || echo "train.TOPICS=$TOPICS"
  echo "train.flags=${TRAIN_FLAGS[*]}"
  for v in BEAM MIN_LEN MAX_LEN_B LENPEN NO_REPEAT GEN_BATCH; do echo "decode.$v=${!v}"; done
  echo "decode.GEN_EXTRA=${GEN_EXTRA:-}"
  echo "decode.flags=${GEN_FLAGS[*]}${*:+ $*}"
}

# spec_changes FILE NEW GROUP: a line "KEY: 'OLD' -> 'NEW'" for each GROUP.KEY (train, decode) of the
# recorded spec FILE that differs in the spec text NEW; the group's flags line only when no named
# variable differs (a change of compare.sh's own settings)
spec_changes() {
  local file=$1 new=$2 group=$3 key line flags=
  local -A old=() now=()
  local -a changes=()
  while IFS= read -r line; do [[ $line != "$group".* ]] || old[${line%%=*}]=${line#*=}; done < "$file"
  while IFS= read -r line; do [[ $line != "$group".* ]] || now[${line%%=*}]=${line#*=}; done <<< "$new"
  for key in $(printf '%s\n' "${!old[@]}" "${!now[@]}" | sort -u); do
    [ "${old[$key]-(none)}" != "${now[$key]-(none)}" ] || continue
    line="  ${key#*.}: '${old[$key]-(none)}' -> '${now[$key]-(none)}'"
    if [ "$key" = "$group.flags" ]; then flags=$line; else changes+=("$line"); fi
  done
  [ ${#changes[@]} -gt 0 ] || [ -z "$flags" ] || changes=("$flags")
  [ ${#changes[@]} -eq 0 ] || printf '%s\n' "${changes[@]}"
}

# set_wall LABEL KEY=VALUE...: sets KEYs in OUT/LABEL/wall.txt (KEY=VALUE on one line), keeping the others
set_wall() {
  local file=$OUT/$1/wall.txt kv; shift
  local -a keep=()
  if [ -f "$file" ]; then
    for kv in $(cat "$file"); do [[ " $* " == *" ${kv%%=*}="* ]] || keep+=("$kv"); done
  fi
  echo "${keep[*]} $*" | xargs > "$file.tmp"
  mv "$file.tmp" "$file"
}

# the labels, models and run specs: all checked before any work
LABELS=()
RESTS=()
SIDES=()
RUN_SPECS=()
for spec in "$@"; do
  [[ $spec == *=* ]] || refuse "'$spec' is not LABEL=ARCH [flags]"
  label=${spec%%=*}
  rest=${spec#*=}
  [[ $label =~ ^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}$ ]] || refuse "bad label '$label' in '$spec': a label names a \
folder of OUT (letters, digits, _ . + -, at most 64, not starting with . or -)"
  case $label in
    results.md|learning_curve.png|run_info.txt|source_gain.png|source_gain.json|report.html|\
references.txt|sources.txt|baselines|baselines.json|baselines.md|baselines.txt|verdicts.json)
      refuse "label '$label' is the name of a file compare.sh writes in OUT" ;;
  esac
  for other in "${LABELS[@]}"; do
    [ "${other,,}" != "${label,,}" ] || refuse "label '$label' given twice ('$other' before it): each model needs its own label"
  done
  read -r -a words <<< "$rest"
  [[ ${words[0]:-} =~ ^[A-Za-z0-9_]+$ ]] || refuse "'$spec': no architecture name after '$label=' (LABEL=ARCH [flags])"
  flags=("${words[@]:1}")
  if [ "$COPY" = 1 ] && ! sets_copy "${flags[@]}" \
    && [ "$(model_of "${words[0]}")" = sum_transformer ]; then
    rest="$rest --pointer-generator True"  # COPY=1 (see above): recorded in the run's spec like any flag
    flags+=(--pointer-generator True)
  fi
  side=()
  for ((i = 0; i < ${#flags[@]}; i++)); do
    [ "${flags[$i]}" = --side-data ] && side=(--side-data "${flags[$((i + 1))]:-}")
  done
  [[ " ${side[*]:-} " != *theta* ]] || check_topics
  new=$(run_spec "$label=$rest" "${side[@]}")
  file=$OUT/$label/run_spec.txt
  if [ -e "$OUT/$label" ] && [ ! -f "$file" ]; then
    refuse "$OUT/$label exists without run_spec.txt (a run of an older compare.sh, or another folder): the settings" \
      "it was made with are unknown. Move it away to train '$label' again, or use another OUT."
  elif [ -f "$file" ]; then
    changes=$(spec_changes "$file" "$new" train)
    [ -z "$changes" ] || refuse "$OUT/$label was trained under another spec than this run's:" "$changes" \
      "Its checkpoint and results are kept as they are: use another OUT (or another label), or remove $OUT/$label to train '$label' again under the new spec."
    changes=$(spec_changes "$file" "$new" decode)
    if [ -n "$changes" ] && decoded "$OUT/$label/test.out"; then
      refuse "$OUT/$label/test.out was decoded with other settings than this run's:" "$changes" \
        "Its checkpoint was trained under the same spec: remove $OUT/$label/test.out to decode it again with the new settings, or use another OUT."
    fi
  fi
  LABELS+=("$label")
  RESTS+=("$rest")
  SIDES+=("${side[*]:-}")
  RUN_SPECS+=("$new")
done

mkdir -p "$OUT"
METEOR_FLAG=$(fairseq-sum-score --help 2>/dev/null | grep -q -- '--meteor' && echo --meteor || true)
{
  echo "# compare.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  # the data folder by its name: results/ keeps no machine path (results_index --check)
  echo "work=$(basename "$WORK") max_update=$MAX_UPDATE seed=$SEED valid_interval=$VALID_INTERVAL max_tokens=$MAX_TOKENS lr=$LR warmup=$WARMUP"
  echo "beam=$BEAM min_len=$MIN_LEN max_len_b=$MAX_LEN_B lenpen=$LENPEN no_repeat=$NO_REPEAT meteor=${METEOR_FLAG:-no}"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | xargs) cores=$(getconf _NPROCESSORS_ONLN) OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset} load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
  echo "gpu=$(python -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")')"
} > "$OUT/run_info.txt"

for i in "${!LABELS[@]}"; do
  label=${LABELS[$i]}
  rest=${RESTS[$i]}
  read -r -a words <<< "$rest"
  arch=${words[0]}
  flags=("${words[@]:1}")
  read -r -a side <<< "${SIDES[$i]}"
  [[ " ${side[*]:-} " != *theta* ]] || fit_topics
  mkdir -p "$OUT/$label"
  printf '%s\n' "${RUN_SPECS[$i]}" > "$OUT/$label/run_spec.txt.tmp"
  mv "$OUT/$label/run_spec.txt.tmp" "$OUT/$label/run_spec.txt"
  printf '%s\n' "$label=$rest" > "$OUT/$label/spec.txt"
  # wall seconds of the train and generate steps, each recorded as soon as it ends (wall.txt), by the
  # launch that ran it; train_resumed=1: that launch resumed a killed one, whose seconds are not counted
  ckpt=$OUT/$label/checkpoints
  trained=$([ -f "$ckpt/.done" ] && echo 1 || echo 0)
  resumed=$([ -f "$ckpt/checkpoint_last.pt" ] && echo 1 || echo 0)
  start=$(date +%s)
  # shellcheck disable=SC2086
  train "$WORK/bin" "$ckpt" --arch "$arch" "${TRAIN_FLAGS[@]}" "${DIST_FLAGS[@]}" "${flags[@]}" ${TRAIN_EXTRA:-}
  [ "$trained" = 1 ] || set_wall "$label" "train_s=$(( $(date +%s) - start ))" "train_resumed=$resumed"
  decoded_before=$(decoded "$OUT/$label/test.out" && echo 1 || echo 0)
  start=$(date +%s)
  # shellcheck disable=SC2086
  generate "$WORK/bin" "$ckpt/checkpoint_last.pt" "$OUT/$label/test.out" "${GEN_FLAGS[@]}" "${side[@]}" ${GEN_EXTRA:-}
  [ "$decoded_before" = 1 ] || set_wall "$label" "generate_s=$(( $(date +%s) - start ))"
  # a score file of an older compare.sh (without the ROUGE-2 specificity) is made again
  scores=$OUT/$label/test.out.rouge.json
  [ ! -f "$scores" ] || grep -q '"specificity"' "$scores" || rm "$scores"
  # shellcheck disable=SC2086
  score "$OUT/$label/test.out" $METEOR_FLAG --specificity
  # does the model read its source? (source gain and distinct summaries: inspection/source_use.py)
  # source_use.json records the sha256 of the output it measured: fairseq-sum-compare --html uses it
  # for that output only
  topics=()  # the topic proportions the model reads are not part of the data's identity
  [ ${#side[@]} -eq 0 ] || topics=(--input "topics=$WORK/bin/test.theta.npy")
  gated "source use" "$OUT/$label/source_use.json" "$OUT/$label/source_use.json" "${topics[@]+"${topics[@]}"}" \
    --input "data=$WORK/bin" --input "checkpoint=$ckpt/checkpoint_last.pt" --input "decoding=$OUT/$label/test.out" \
    --root "$OUT" -- python -m fairseq_sum_plugins.inspection.source_use "$WORK/bin" --path "$ckpt/checkpoint_last.pt" \
      --split test --generate-output "$OUT/$label/test.out" --json "$OUT/$label/source_use.json" "${side[@]}"
  # the test outputs as committed (evaluation/decodings.py): OUT/LABEL/decodings.txt and .json (sha256 of
  # decodings, checkpoint, data), OUT/references.txt and OUT/sources.txt (the same for every label).
  # Always made again (no step_gate): it reads text and hashes files, so it is cheap and
  # deterministic, and its outputs are never older than the decoding, checkpoint and data they name
  python -m fairseq_sum_plugins.evaluation.decodings "$OUT/$label/test.out" --out "$OUT/$label" \
    --table-dir "$OUT" --data "$WORK/bin" --checkpoint "$ckpt/checkpoint_last.pt"
done
# the baselines of the test set (once per prepared data; seed 1 whatever SEED: they do not train)
baselines_once "$WORK" "$OUT/baselines.json"
if command -v fairseq-sum-compare > /dev/null && [ ${#LABELS[@]} -gt 1 ]; then
  for label in "${LABELS[@]:1}"; do
    log "significance: ${LABELS[0]} vs $label"
    fairseq-sum-compare "$OUT/${LABELS[0]}/test.out" "$OUT/$label/test.out" > "$OUT/$label/vs_${LABELS[0]}.txt" 2>&1 \
      || log "fairseq-sum-compare failed: see $OUT/$label/vs_${LABELS[0]}.txt"
  done
fi
if [ "$CURVES" = 1 ]; then  # source gain over updates (valid split), every interval checkpoint
  runs=()
  for label in "${LABELS[@]}"; do runs+=(--path "$OUT/$label/checkpoints"); done
  names=$(IFS=,; echo "${LABELS[*]}")
  python -m fairseq_sum_plugins.inspection.source_curve "$WORK/bin" "${runs[@]}" --names "$names" --split valid \
    --png "$OUT/source_gain.png" --json "$OUT/source_gain.json"
fi
# the page a reviewer reads: every model's outputs beside the source and reference
if [ ${#LABELS[@]} -gt 1 ]; then
  outs=()
  for label in "${LABELS[@]}"; do outs+=("$OUT/$label/test.out"); done
  base=()
  # fairseq-sum-baselines' JSON of the test set, when present
  [ ! -f "$OUT/baselines.json" ] || base=(--baselines "$OUT/baselines.json")
  python -m fairseq_sum_plugins.evaluation.compare "${outs[@]}" --src "$OUT/sources.txt" \
    --names "$(IFS=,; echo "${LABELS[*]}")" "${base[@]}" --html "$OUT/report.html" > /dev/null
fi
python -m fairseq_sum_plugins.evaluation.compare_report "$OUT" "${LABELS[@]}"
# the baseline rows and the verdicts beside the models (OUT/baselines.md, verdicts.json, a section
# of results.md)
python -m fairseq_sum_plugins.evaluation.baselines.table "$OUT" "$WORK" "${LABELS[@]}" > /dev/null
