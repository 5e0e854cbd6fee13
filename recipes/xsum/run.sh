#!/usr/bin/env bash
# XSum with the TP-Transformer paper's setup (§3.2, App. B): 6+6 layers, d_m 512, 8 heads, d_f 2048,
# Adafactor with square-root learning-rate decay, dropout 0.1, batch 32 per GPU x 4 GPUs (emulated
# with --update-freq on fewer GPUs), trained from scratch; test decoding with beam 1 and beam 4.
#
#   bash recipes/xsum/run.sh ARCH XSUM [SPLIT_FILE]
#     ARCH   t5_transformer_base | tp_transformer_base | tp_transformer_continuous_base
#     XSUM   HF `xsum` JSONL (a file, or a dir with train/validation/test .jsonl), or the raw BBC
#            extraction dir (`*.summary` files; then SPLIT_FILE = XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json)
#
# Environment: WORK (data/xsum), NGPU (GPUs on this machine, 1), MAX_UPDATE (200000: the paper does
# not state its step count), FP16 (1 on GPU), VOCAB (32000).
#
# Schedule: Adafactor at lr 0.01 for 10k updates, then 0.01 * sqrt(10000 / step) = 1/sqrt(step),
# the T5 "inverse square root" schedule the paper's Transformer baseline is built on
# (fairseq's inverse_sqrt with warmup-init-lr = lr).
source "$(dirname "$0")/../common.sh"
ARCH=${1:?usage: run.sh ARCH XSUM [SPLIT_FILE]}
XSUM=${2:?usage: run.sh ARCH XSUM [SPLIT_FILE]}
SPLIT_FILE=${3:-}
WORK=${WORK:-data/xsum}
NGPU=${NGPU:-1}
MAX_UPDATE=${MAX_UPDATE:-200000}
VOCAB=${VOCAB:-32000}
UPDATE_FREQ=$(( (4 + NGPU - 1) / NGPU ))
FP16_FLAG=$([ "${FP16:-1}" = 1 ] && python -c "import torch; print('--fp16' if torch.cuda.is_available() else '')" || true)

if [ ! -f "$WORK/jsonl/test.jsonl" ]; then
  if [ -n "$SPLIT_FILE" ]; then
    python -m preprocess.xsum_to_jsonl --raw-dir "$XSUM" --split-file "$SPLIT_FILE" --out "$WORK/jsonl"
  else
    python -m preprocess.xsum_to_jsonl --jsonl "$XSUM" --out "$WORK/jsonl"
  fi
fi
prepare "$WORK/jsonl" "$WORK" --vocab-size "$VOCAB" --max-src-tokens 512 --max-tgt-tokens 64 --workers "$(nproc)"

train "$WORK/bin" "$WORK/checkpoints/$ARCH" --arch "$ARCH" $FP16_FLAG \
  --optimizer adafactor --lr 0.01 --lr-scheduler inverse_sqrt --warmup-updates 10000 --warmup-init-lr 0.01 \
  --dropout 0.1 --label-smoothing 0.1 --batch-size 32 --update-freq "$UPDATE_FREQ" --max-update "$MAX_UPDATE" \
  --max-source-positions 520 --max-target-positions 80 --num-workers 4 \
  --eval-rouge --eval-rouge-args '{"beam": 1, "max_len_b": 64}' \
  --best-checkpoint-metric rouge_l --maximize-best-checkpoint-metric \
  --save-interval-updates 5000 --validate-interval-updates 5000 --keep-interval-updates 2 --no-epoch-checkpoints

for BEAM in 1 4; do
  OUT="$WORK/test.$ARCH.beam$BEAM.out"
  generate "$WORK/bin" "$WORK/checkpoints/$ARCH/checkpoint_best.pt" "$OUT" \
    --gen-subset test --beam "$BEAM" --batch-size 64 --max-len-b 64 $FP16_FLAG
  score "$OUT"
done
