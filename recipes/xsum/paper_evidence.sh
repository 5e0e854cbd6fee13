#!/usr/bin/env bash
# Each paper's own analysis on small models that read their documents, over several seeds (CPU).
#
#   bash recipes/xsum/paper_evidence.sh WORK OUT
#     WORK  a folder prepared by fairseq-sum-prepare from the 1,000 XSum pairs (results/README.md,
#           "Each paper's own analysis": the split and prepare commands), with --write-full-src
#     OUT   output folder: OUT/seed<S>/<label>/ per run, OUT/results.md and the figures
#
# Per seed (SEEDS, default "1 2 3") one recipes/compare.sh run trains every model of the grid for
# MAX_UPDATE (500) updates with the same batches and optimizer (d 128, 2+2 layers, 4 heads, d_f 512 for
# the transformers; the GRU models at their presets), COPY=1 (the copy mechanism that makes these
# small transformers read: results/README.md, "Which transformers read their documents"), then each
# paper's analysis runs on the last checkpoints:
#   TP-Transformer   fairseq-sum-probe (POS, DEP; labels: TRAIN_CONLLU, a CoNLL-U of the training
#                    summaries, e.g. preprocess/spacy_conllu.py over fairseq-sum-probe --write-words),
#                    fairseq-sum-roles (§4.4)
#   information sel. inspection/gate_sweep.py, thresholds 0-0.99, with and without --gate-warmup-updates;
#                    the pruned generation speed in 5 interleaved rounds (--timing-rounds)
#   ETADS            inspection/focus_plot.py; focus-only and saliency-only ablations
#   Topic Assistant  fairseq-sum-score --topic-model (semantic similarity), inspection/topics.py attention
#   Mem2Mem          fairseq-sum-score --novel-ngrams, inspection/implicit_extraction.py (vs the oracle)
# fairseq-sum-inspect writes OUT/inspect.html (each mechanism of the first seed's feature models on
# the test documents INSPECT_DOCUMENTS, 0,1,2), and ledger/paper_evidence.py writes OUT/results.md
# (mean +- sd and each seed), with the baselines and each model's verdict "specific to its document"
# over the seeds (evaluation/baseline_table.py --across). Steps whose output exists and was made under the same
# spec (common.sh step_gate: the checkpoints, data and labels read, by content, SMOKE, the flags)
# are skipped, so a re-run resumes; one under another spec is refused naming the difference, or
# redone with FORCE=1. The decodings, the page, the tables are made again on every run.
# Environment: SEEDS ("1 2 3"), MAX_UPDATE (500), TRAIN_CONLLU (WORK/probe/train.conllu; without it the
# probe is skipped with a message), GATE_WARMUP (MAX_UPDATE / 2), INSPECT_DOCUMENTS (0,1,2), and
# compare.sh's variables.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
USAGE="usage: paper_evidence.sh WORK OUT"
WORK=${1:?$USAGE}
OUT=${2:?$USAGE}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SEEDS=${SEEDS:-1 2 3}
for s in $SEEDS; do require_int s 0; done
export MAX_UPDATE=${MAX_UPDATE:-500}
require_int MAX_UPDATE 1
GATE_WARMUP=${GATE_WARMUP:-$((MAX_UPDATE / 2))}
require_int GATE_WARMUP 0
TRAIN_CONLLU=${TRAIN_CONLLU:-$WORK/probe/train.conllu}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} LR=${LR:-1e-3} WARMUP=${WARMUP:-100} VALID_INTERVAL=${VALID_INTERVAL:-250}
export BEAM=${BEAM:-4} MIN_LEN=${MIN_LEN:-10} MAX_LEN_B=${MAX_LEN_B:-64} MAX_TOKENS=${MAX_TOKENS:-4000} CURVES=${CURVES:-1} COPY=1
D=$WORK/bin
TINY="--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 128 --encoder-ffn-embed-dim 512 --encoder-attention-heads 4 --decoder-embed-dim 128 --decoder-ffn-embed-dim 512 --decoder-attention-heads 4"
SPECS=(
  "base=t5_transformer_small $TINY"
  "tpt=tp_transformer_small $TINY"
  "gate=transformer_gated_small $TINY"
  "gate_warm=transformer_gated_small $TINY --gate-warmup-updates $GATE_WARMUP"
  "etads_baseline=etads_baseline $TINY"
  "etads=etads_base $TINY"
  "etads_focus=etads_base $TINY --saliency-layers none"
  "etads_saliency=etads_base $TINY --focus-layers none"
  "ta=transformer_ta_small $TINY --side-data theta"
  "hred=hred_base"
  "mem2mem=mem2mem_base"
)

for S in $SEEDS; do
  SEED=$S bash "$ROOT/recipes/compare.sh" "$WORK" "$OUT/seed$S" "${SPECS[@]}"
  run() { echo "$OUT/seed$S/$1"; }
  ck() { echo "$OUT/seed$S/$1/checkpoints/checkpoint_last.pt"; }
  # TP-Transformer: probing grid (POS, DEP) of TPT-d and its baseline; TPT-d's role share. Every
  # step below goes through common.sh gated (step_gate): its record names the checkpoint, the data
  # and the labels it read by content, so a retrained model or other labels are refused (FORCE=1)
  if [ -f "$TRAIN_CONLLU" ]; then
    for m in base tpt; do for t in pos dep; do
      o=$(run $m)/probe_$t.json
      gated "seed $S: probe $m $t" "$o" "$o" --stdout "${o%.json}.txt" --input "data=$D" --input "checkpoint=$(ck $m)" \
        --input "labels=$TRAIN_CONLLU" --root "$OUT" -- fairseq-sum-probe "$D" --path "$(ck $m)" --split train \
        --labels "$TRAIN_CONLLU" --task $t --max-documents 0 --seed "$S" --json "$o" --png "${o%.json}.png"
    done; done
  else
    log "probe skipped: $TRAIN_CONLLU missing (TRAIN_CONLLU: a CoNLL-U of the training summaries)"
  fi
  o=$(run tpt)/roles.json
  gated "seed $S: roles" "$o" "$o" --stdout "${o%.json}.txt" --input "data=$D" --input "checkpoint=$(ck tpt)" \
    --root "$OUT" -- fairseq-sum-roles "$D" --path "$(ck tpt)" --split valid --json "$o" --png "${o%.json}.png"
  # information selection: the threshold sweep, with and without the gate warm-up
  for m in gate gate_warm; do
    o=$(run $m)/sweep
    gated "seed $S: gate sweep $m" "$o/" "$o/gate_sweep.json" --stdout "$o.txt" --input "data=$D" \
      --input "checkpoint=$(ck $m)" --root "$OUT" -- python -m fairseq_sum_plugins.inspection.gate_sweep "$D" \
      --path "$(ck $m)" --split test --max-documents 100 --beam "$BEAM" --max-len-b "$MAX_LEN_B" --batch-size 25 \
      --thresholds 0 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 0.95 0.99 --out "$o"
    # the pruned generation speed at the chosen thresholds, timed in interleaved rounds (run it on an
    # otherwise idle machine: the sweep above times each threshold once, in sequence)
    o=$(run $m)/timing
    [ "$m" = gate ] && ts="0 0.1" || ts="0 0.1 0.7"
    # shellcheck disable=SC2086
    gated "seed $S: gate timing $m" "$o/" "$o/gate_sweep.json" --stdout "$o.txt" --input "data=$D" \
      --input "checkpoint=$(ck $m)" --root "$OUT" -- python -m fairseq_sum_plugins.inspection.gate_sweep "$D" \
      --path "$(ck $m)" --split test --max-documents 100 --beam "$BEAM" --max-len-b "$MAX_LEN_B" --batch-size 25 \
      --thresholds $ts --timing-rounds 5 --out "$o"
  done
  # ETADS: the learned focus (plotted for validation document 0, measured over every validation document)
  o=$(run etads)/focus.png
  gated "seed $S: focus" "${o%.png}_all.json" "${o%.png}_all.json" --stdout "${o%.png}.txt" --input "data=$D" \
    --input "checkpoint=$(ck etads)" --root "$OUT" -- python -m fairseq_sum_plugins.inspection.focus_plot "$D" \
    --path "$(ck etads)" --split valid --document 0 --png "$o" --json "${o%.png}.json" --all-json "${o%.png}_all.json"
  # Topic Assistant: semantic similarity (TA eq. 10) of both models' summaries; attention on the topic prefix
  for m in base ta; do
    o=$(run $m)/semsim.json
    gated "seed $S: semantic similarity $m" "$o" "$o" --stdout "${o%.json}.txt" --input "data=$D" \
      --input "decoding=$(run $m)/test.out" --input "topics=$D/topic_model.npz" --root "$OUT" -- \
      fairseq-sum-score --generate-output "$(run $m)/test.out" --data "$D" --topic-model "$D/topic_model.npz" --json "$o"
  done
  o=$(run ta)/topic_attention.json
  gated "seed $S: topic attention" "$o" "$o" --stdout "${o%.json}.txt" --input "data=$D" --input "checkpoint=$(ck ta)" \
    --input "topics=$D/valid.theta.npy" --root "$OUT" -- python -m fairseq_sum_plugins.inspection.topics attention "$D" \
    --path "$(ck ta)" --split valid --png "${o%.json}.png" --json "$o"
  # Mem2Mem vs HRED: novel n-grams; implicit extraction against the oracle
  for m in hred mem2mem; do
    o=$(run $m)/novel.json
    gated "seed $S: novel n-grams $m" "$o" "$o" --stdout "${o%.json}.txt" --input "data=$D" \
      --input "decoding=$(run $m)/test.out" --root "$OUT" -- \
      fairseq-sum-score --generate-output "$(run $m)/test.out" --data "$D" --novel-ngrams --json "$o"
  done
  o=$(run mem2mem)/extraction
  gated "seed $S: implicit extraction" "$o/" "$o/scores.json" --stdout "$o.txt" --input "data=$D" \
    --input "checkpoint=$(ck mem2mem)" --root "$OUT" -- python -m fairseq_sum_plugins.inspection.implicit_extraction \
    "$D" --path "$(ck mem2mem)" --split test --lead 3 --out "$o" --document 0 --beam "$BEAM" --max-len-b "$MAX_LEN_B"
  # each run's test outputs as committed (evaluation/decodings.py; compare.sh wrote them with
  # OUT/seed$S's references): the references and sources of the table, OUT/references.txt and
  # OUT/sources.txt, checked to be the same for every run. Always made again (no step_gate): it
  # reads text and hashes files, cheap and deterministic, so they never name an older run
  for spec in "${SPECS[@]}"; do
    m=${spec%%=*}
    python -m fairseq_sum_plugins.evaluation.decodings "$(run $m)/test.out" --out "$(run $m)" \
      --table-dir "$OUT" --data "$D" --checkpoint "$(ck $m)"
  done
done
# the table's baselines and their extracts (OUT/baselines.json, OUT/baselines/NAME.txt), which
# results_index rescores against OUT/references.txt with each run's paired bootstrap against Lead-3
baselines_once "$WORK" "$OUT/baselines.json"
# the page a reviewer reads (fairseq-sum-compare --html): every model of the first seed beside the
# source and reference, with the table's baselines when OUT/baselines.json (fairseq-sum-baselines)
# exists
first=$(set -- $SEEDS; echo "$1")
outs=()
names=()
for spec in "${SPECS[@]}"; do
  outs+=("$OUT/seed$first/${spec%%=*}/test.out")
  names+=("${spec%%=*}")
done
base=()
[ ! -f "$OUT/baselines.json" ] || base=(--baselines "$OUT/baselines.json")
python -m fairseq_sum_plugins.evaluation.compare "${outs[@]}" --src "$OUT/sources.txt" \
  --names "$(IFS=,; echo "${names[*]}")" "${base[@]}" --html "$OUT/report.html" \
  --title "Every model of seed $first on the test documents" > /dev/null
python -m ledger.paper_evidence "$OUT" > /dev/null
# each paper's mechanism on the first test documents (fairseq-sum-inspect): the feature models of
# the first seed on one page, their beam output decoded with the table's options
INSPECT=(tpt gate etads ta mem2mem)
ckpts=()
inputs=()
for m in "${INSPECT[@]}"; do
  ckpts+=(--path "$OUT/seed$first/$m/checkpoints/checkpoint_last.pt")
  inputs+=(--input "$m=$OUT/seed$first/$m/checkpoints/checkpoint_last.pt")
done
gated inspect "$OUT/inspect.html" "$OUT/inspect.html" --input "data=$D" "${inputs[@]}" --root "$OUT" -- \
  fairseq-sum-inspect "$D" "${ckpts[@]}" --names "$(IFS=,; echo "${INSPECT[*]}")" --split test \
  --documents "${INSPECT_DOCUMENTS:-0,1,2}" --beam "$BEAM" --max-len-b "$MAX_LEN_B" --min-len "$MIN_LEN" \
  --no-repeat-ngram-size 3 --title "Each paper's mechanism on test documents (seed $first)" \
  --html "$OUT/inspect.html"
# the baseline rows (fairseq-sum-baselines of the test set, compare.sh's OUT/seed*/baselines.json)
# and every model's verdict "specific to its document" and paired bootstrap against Lead-3, per seed, as a section
# of OUT/results.md and OUT/baselines.md (evaluation/baseline_table.py)
seed_outs=()
for S in $SEEDS; do seed_outs+=("$OUT/seed$S"); done
python -m fairseq_sum_plugins.evaluation.baselines.table "$OUT" --across "${seed_outs[@]}" > /dev/null
log "wrote $OUT/results.md"
