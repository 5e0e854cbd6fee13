#!/usr/bin/env bash
# Newsroom, information selection as the paper ran it (Ishimwe & Grave, §4.1-4.3): a pre-trained T5-base
# imported from a Hugging Face directory, fine-tuned with the gate layer, one model per lambda of the
# paper's grid, each swept over thresholds 0.00 .. 0.99 at inference.
#
#   bash recipes/newsroom/t5_gated.sh NEWSROOM_DIR T5_DIR
#     NEWSROOM_DIR  the release (train/dev/test .jsonl[.gz])
#     T5_DIR        a Hugging Face T5 v1.0 directory (config.json, model.safetensors or pytorch_model.bin,
#                   spiece.model), e.g. a local copy of t5-base; nothing is downloaded
#
# Environment: ARCH (t5_base_gated; t5_small_gated for t5-small), WORK (data/newsroom-t5), NGPU (1),
# MAX_UPDATE (20000), LAMBDAS ("0.0 0.1 0.2 0.3 0.4 0.5 0.6 0.7": one fine-tuning per value),
# VALID_THRESHOLD (0.1: the threshold of validation's gate_sparsity), THRESHOLDS (0.00 0.01 .. 0.99),
# SUBSET (1000: examples of the valid and test subsets that are decoded and scored), SWEEP_SUBSETS
# ("valid test"), BEAM (4), MAX_LEN_B (128: summary pieces decoded), MAX_TOKENS (4096), LR (1e-4),
# FP16 (1 on GPU), EXTRA (more train flags).
#
# Paper -> flags:
#   T5-base initialisation (§4.2)                   fairseq-sum-import-t5 T5_DIR WORK/t5, then
#                                                     fairseq-train --restore-file WORK/t5/model.pt --arch t5_base_gated
#                                                     (the gate, absent from T5, starts with PyTorch's Linear init)
#   T5's own vocabulary                             fairseq-sum-prepare --spm-model WORK/t5/spm.model --dict WORK/t5/dict.txt
#   drop documents < 100, summaries < 10 tokens     newsroom_to_jsonl --min-doc-tokens 100 --min-summary-tokens 10
#   documents truncated to 700 tokens               --max-src-tokens 699: 699 pieces + </s> = 700 T5 tokens
#   lambda in [0.0, 0.7], step 0.1 (§5)             LAMBDAS loop, --gate-l1-weight (per-token normalisation, features/information_selection.py)
#   dropout 0.1                                     the t5_* presets (T5's placement)
#   best checkpoint by validation perplexity        --best-checkpoint-metric nll_loss (without the gate loss)
#   threshold in [0.0, 1.0), step 0.01 (§5)         gate_sweep --thresholds 0.00 .. 0.99 (Algorithm 1 pruning)
#   ROUGE-1/2/L on 1k-example subsets of valid and  gate_sweep --max-documents SUBSET on each of SWEEP_SUBSETS
#     test (§4.3)                                     (gate_sweep.{md,json}, sparsity_rouge.png, gate_scores.png)
# Fine-tuning hyper-parameters are not given by the paper: Adam, lr 1e-4 with 500 warm-up updates and
# polynomial decay, no label smoothing (T5 uses none).
source "$(dirname "$0")/../common.sh"
NEWSROOM=${1:?usage: t5_gated.sh NEWSROOM_DIR T5_DIR}
T5=${2:?usage: t5_gated.sh NEWSROOM_DIR T5_DIR}
ARCH=${ARCH:-t5_base_gated}
WORK=${WORK:-data/newsroom-t5}
NGPU=${NGPU:-1}
MAX_UPDATE=${MAX_UPDATE:-20000}
LAMBDAS=${LAMBDAS:-0.0 0.1 0.2 0.3 0.4 0.5 0.6 0.7}
VALID_THRESHOLD=${VALID_THRESHOLD:-0.1}
THRESHOLDS=${THRESHOLDS:-$(seq -f %.2f 0 0.01 0.99 | tr '\n' ' ')}
SUBSET=${SUBSET:-1000}
SWEEP_SUBSETS=${SWEEP_SUBSETS:-valid test}
BEAM=${BEAM:-4}
MAX_LEN_B=${MAX_LEN_B:-128}
MAX_TOKENS=${MAX_TOKENS:-4096}
LR=${LR:-1e-4}
for v in NGPU MAX_UPDATE SUBSET BEAM MAX_LEN_B MAX_TOKENS; do require_int "$v" 1; done
require_number LR positive
FP16_FLAG=$(fp16_flag)
IMPORTED="$WORK/t5"

if ! step_gate import "$IMPORTED/" "$([ -f "$IMPORTED/model.pt" ] && echo 1 || echo 0)" --input "T5=$T5"; then
  log "import: $IMPORTED exists, skipped"
else
  log "import: $T5 -> $IMPORTED"
  fairseq-sum-import-t5 "$T5" "$IMPORTED"
fi
converted "$WORK/jsonl" "$NEWSROOM" "" newsroom --min-doc-tokens 100 --min-summary-tokens 10 ||
  python -m preprocess.newsroom_to_jsonl --in "$NEWSROOM" --out "$WORK/jsonl" --min-doc-tokens 100 --min-summary-tokens 10
prepare "$WORK/jsonl" "$WORK" --spm-model "$IMPORTED/spm.model" --dict "$IMPORTED/dict.txt" \
  --max-src-tokens 699 --max-tgt-tokens 128 --workers "$(nproc)"

for LAMBDA in $LAMBDAS; do
  SAVE="$WORK/checkpoints/$ARCH.l$LAMBDA"
  # fine-tune from the imported T5 on the first launch; afterwards resume from checkpoint_last.pt
  if [ -f "$SAVE/checkpoint_last.pt" ]; then RESTORE=()
  else RESTORE=(--restore-file "$IMPORTED/model.pt" --reset-optimizer --reset-dataloader --reset-meters --reset-lr-scheduler); fi
  # shellcheck disable=SC2086
  train "$WORK/bin" "$SAVE" --arch "$ARCH" $FP16_FLAG ${EXTRA:-} "${RESTORE[@]}" \
    --gate-l1-weight "$LAMBDA" --gate-threshold "$VALID_THRESHOLD" --required-batch-size-multiple 1 \
    --optimizer adam --adam-betas '(0.9, 0.999)' --adam-eps 1e-08 --clip-norm 1.0 --weight-decay 0.0 \
    --lr-scheduler polynomial_decay --lr "$LR" --total-num-update "$MAX_UPDATE" --warmup-updates 500 \
    --max-update "$MAX_UPDATE" --max-tokens "$MAX_TOKENS" --update-freq $(( (4 + NGPU - 1) / NGPU )) \
    --max-source-positions 700 --max-target-positions 129 --skip-invalid-size-inputs-valid-test \
    --no-epoch-checkpoints --save-interval-updates 2000 --validate-interval-updates 2000 \
    --keep-interval-updates 2 --best-checkpoint-metric nll_loss

  for SUB in $SWEEP_SUBSETS; do
    SWEEP="$WORK/gate_sweep.$ARCH.l$LAMBDA.$SUB"
    if ! step_gate "gate sweep" "$SWEEP/" "$([ -f "$SWEEP/gate_scores.png" ] && echo 1 || echo 0)" --input "data=$WORK/bin" \
      --input "checkpoint=$SAVE/checkpoint_best.pt" -- "$SUBSET" "$BEAM" "$MAX_LEN_B" $THRESHOLDS; then
      log "gate sweep: $SWEEP exists, skipped"; continue
    fi
    log "gate sweep: lambda $LAMBDA, $SUB (first $SUBSET examples) -> $SWEEP"
    # shellcheck disable=SC2086
    python -m fairseq_sum_plugins.inspection.gate_sweep "$WORK/bin" --path "$SAVE/checkpoint_best.pt" \
      --split "$SUB" --max-documents "$SUBSET" --beam "$BEAM" --max-len-b "$MAX_LEN_B" --out "$SWEEP" \
      --thresholds $THRESHOLDS
  done
done

# lambda x threshold overview of the test sweeps (paper Fig. 2 / Table 2)
python - "$WORK" "$ARCH" "$LAMBDAS" <<'EOF'
import json, os, sys
work, arch, lambdas = sys.argv[1], sys.argv[2], sys.argv[3].split()
print("| lambda | best test threshold (R-2) | sparsity | R-1 | R-2 | R-L |\n|---|---|---|---|---|---|")
for lam in lambdas:
    path = os.path.join(work, f"gate_sweep.{arch}.l{lam}.test", "gate_sweep.json")
    if os.path.exists(path):
        best = max(json.load(open(path)), key=lambda r: r["rouge2"])
        print(f"| {lam} | {best['threshold']:g} | {best['sparsity']:.2f}% | {best['rouge1']:.2f} | "
              f"{best['rouge2']:.2f} | {best['rougeL']:.2f} |")
EOF
