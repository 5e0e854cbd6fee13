#!/usr/bin/env bash
# Gate-loss weight sweep for the from-scratch information selection recipe (transformer_gated.sh):
# small transformer_gated models trained for a fixed number of updates on a fixed split of an XSum-style
# JSONL file, one model per lambda, and a table of lambda, gate sparsity at t = 0.1, validation NLL,
# test ROUGE and whether the model reads its source (Markdown, WORK/sweep.md). CPU-sized: ~2 updates/s
# on one core.
#
#   bash recipes/newsroom/gate_lambda_sweep.sh PAIRS_JSONL
#     PAIRS_JSONL  JSONL with `document` and `summary` (e.g. 1,000 XSum pairs in the HF layout); its
#                  first N_TRAIN lines train, the next N_VALID validate, the next N_TEST test
#
# TARGET (summary) picks what the models learn to write: `summary`, the reference summaries; `lead`,
# each document's first sentence (the document kept whole): real text whose target is in the source,
# like Newsroom's extractive bin, so that a small model trained from scratch for a few hundred updates
# reads its source. Where it does not (source gain 0), every gate closes whatever lambda is, and a
# sweep cannot tell lambdas apart.
#
# Environment: WORK (data/gate-lambda-sweep), TARGET (summary), LAMBDAS ("0 0.01 0.1"), NORM (token: the criterion's
# --gate-l1-norm), WARMUP (0: --gate-warmup-updates), MAX_UPDATE (500), N_TRAIN/N_VALID/N_TEST
# (800/100/100), VOCAB (4000), DIM (128), LAYERS (2), THRESHOLD (0.1), EXTRA (more train flags),
# VALID_EVERY (MAX_UPDATE: validation and checkpoint interval, for a learning curve in train.log),
# REFERENCE (0; 1: one more row, lambda `none`: the same model without the gate layer, trained alike),
# TAG (NORM.wWARMUP.uMAX_UPDATE: names the runs; finished runs are reused). Rows accumulate in WORK/sweep.md.
#
#   for W in 0 250; do WARMUP=$W bash recipes/newsroom/gate_lambda_sweep.sh PAIRS_JSONL; done
#
# Columns: sparsity = % of test source tokens whose gate is <= THRESHOLD (removed, Algorithm 1);
# valid NLL = validation nll_loss (base 2, per target token, at THRESHOLD, without label smoothing or
# the gate loss) of the last checkpoint; ROUGE-1/2/L F1 of greedy test summaries decoded at THRESHOLD
# (fairseq_sum_plugins.inspection.gate_sweep: rouge155-py, stemming, summary-level ROUGE-L); source gain =
# bits per test summary token the model gains from its own document over another at THRESHOLD (0: the
# source is ignored; inspection/source_use.py); distinct = different greedy summaries of the N_TEST.
source "$(dirname "$0")/../common.sh"
PAIRS=${1:?usage: gate_lambda_sweep.sh PAIRS_JSONL}
WORK=${WORK:-data/gate-lambda-sweep}
TARGET=${TARGET:-summary}
[[ $TARGET == summary || $TARGET == lead ]] || { echo "gate_lambda_sweep.sh: TARGET must be summary or lead, got '$TARGET'" >&2; exit 2; }
LAMBDAS=${LAMBDAS:-"0 0.01 0.1"}
NORM=${NORM:-token}
WARMUP=${WARMUP:-0}
MAX_UPDATE=${MAX_UPDATE:-500}
TAG=${TAG:-$NORM.w$WARMUP.u$MAX_UPDATE}
VALID_EVERY=${VALID_EVERY:-$MAX_UPDATE}
N_TRAIN=${N_TRAIN:-800}
N_VALID=${N_VALID:-100}
N_TEST=${N_TEST:-100}
VOCAB=${VOCAB:-4000}
DIM=${DIM:-128}
LAYERS=${LAYERS:-2}
THRESHOLD=${THRESHOLD:-0.1}
for v in MAX_UPDATE VALID_EVERY N_TRAIN N_VALID N_TEST VOCAB DIM LAYERS; do require_int "$v" 1; done
require_int WARMUP 0
require_number THRESHOLD

if ! converted "$WORK/jsonl" "$PAIRS" "" "sizes=$N_TRAIN/$N_VALID/$N_TEST" "TARGET=$TARGET"; then
  python - "$PAIRS" "$WORK/jsonl" "$N_TRAIN" "$N_VALID" "$N_TEST" "$TARGET" <<'EOF'
import json, os, sys
from preprocess.converter_io import lead_sentence
pairs, out, sizes, target = sys.argv[1], sys.argv[2], [int(n) for n in sys.argv[3:6]], sys.argv[6]
with open(pairs, encoding="utf-8-sig") as f:
    lines = [line for line in f if line.strip()]
if target == "lead":  # the document's first sentence as its summary (the converters' --target lead)
    records = [json.loads(line) for line in lines]
    for n, r in enumerate(records, 1):
        r["summary"] = lead_sentence(r.get("document") or "")
        if r["summary"] is None:
            sys.exit(f"{pairs}:{n}: no `document` text to take a lead sentence from")
    lines = [json.dumps(r, ensure_ascii=False) + "\n" for r in records]
if len(lines) < sum(sizes):
    sys.exit(f"{pairs}: {len(lines)} pairs, the split needs {sum(sizes)}")
os.makedirs(out, exist_ok=True)
start = 0
for split, n in zip(("train", "valid", "test"), sizes):  # test last: `converted` tests for it
    with open(os.path.join(out, split + ".jsonl.tmp"), "w", encoding="utf-8") as f:
        f.writelines(lines[start : start + n])
    os.replace(os.path.join(out, split + ".jsonl.tmp"), os.path.join(out, split + ".jsonl"))
    start += n
EOF
fi
prepare "$WORK/jsonl" "$WORK" --src-field document --tgt-field summary --vocab-size "$VOCAB" \
  --max-src-tokens 700 --num-threads 1 --workers 1

RUNS=$LAMBDAS
[ "${REFERENCE:-0}" = 1 ] && RUNS="$RUNS none"
for LAMBDA in $RUNS; do
  SAVE="$WORK/checkpoints/$TAG.l$LAMBDA"
  GATE=(--gate-l1-weight "$LAMBDA" --gate-l1-norm "$NORM" --gate-warmup-updates "$WARMUP" --gate-threshold "$THRESHOLD")
  REF=()
  if [ "$LAMBDA" = none ]; then  # the reference: no gate layer
    SAVE="$WORK/checkpoints/plain.u$MAX_UPDATE"
    GATE=(--gate False)
    REF=(--reference)
  fi
  # shellcheck disable=SC2086
  train "$WORK/bin" "$SAVE" --arch transformer_gated_small ${EXTRA:-} "${GATE[@]}" \
    --encoder-embed-dim "$DIM" --encoder-ffn-embed-dim $((4 * DIM)) --encoder-attention-heads 4 \
    --encoder-layers "$LAYERS" --decoder-layers "$LAYERS" \
    --optimizer adam --adam-betas '(0.9, 0.98)' --lr 1e-3 --lr-scheduler inverse_sqrt --warmup-updates 100 \
    --clip-norm 1.0 --dropout 0.1 --label-smoothing 0.1 --max-tokens 4096 --max-update "$MAX_UPDATE" \
    --max-source-positions 704 --seed 1 --num-workers 0 --no-epoch-checkpoints --no-save-optimizer-state \
    --validate-interval 1000000 --save-interval 1000000 \
    --validate-interval-updates "$VALID_EVERY" --save-interval-updates "$VALID_EVERY" --keep-interval-updates 1 \
    --log-interval 50 --cpu
  OUTD="$WORK/sweep/$(basename "$SAVE")"
  if [ ! -f "$OUTD/gate_sweep.json" ]; then
    python -m fairseq_sum_plugins.inspection.gate_sweep "$WORK/bin" --path "$SAVE/checkpoint_last.pt" "${REF[@]}" \
      --split test --thresholds "$THRESHOLD" --beam 1 --max-len-b 64 --cpu --out "$OUTD"
  fi
  python - "$LAMBDA" "$NORM" "$WARMUP" "$MAX_UPDATE" "$SAVE/train.log" "$OUTD/gate_sweep.json" > "$WORK/rows.$(basename "$SAVE").tsv" <<'EOF'
import json, re, sys
lam, norm, warmup, updates, log, sweep = sys.argv[1:7]
if lam == "none":  # the reference without gates
    norm = warmup = "-"
valid = [line for line in open(log, encoding="utf-8") if "valid on 'valid' subset" in line][-1]
nll = float(re.search(r"nll_loss ([0-9.]+)", valid).group(1))
row = json.load(open(sweep, encoding="utf-8"))[0]
print("\t".join([lam, norm, warmup, updates, f"{row['sparsity']:.1f}", f"{nll:.2f}"]
                + [f"{row[k]:.2f}" for k in ("rouge1", "rouge2", "rougeL")]
                + [f"{row['source_gain']:.3f}", f"{row['distinct']}/{row['n']}"]))
EOF
done

{
  echo "| lambda | --gate-l1-norm | --gate-warmup-updates | updates | sparsity % at t=$THRESHOLD | valid NLL (bits) | R-1 | R-2 | R-L | source gain (bits) | distinct |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  sort -t "$(printf '\t')" -k1,1g -k2,2 -k3,3n -k4,4n "$WORK"/rows.*.tsv | awk -F'\t' 'NF == 11 {printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11}'
} | tee "$WORK/sweep.md"
