#!/usr/bin/env bash
# Newsroom, information selection on a pre-trained fairseq BART (the paper fine-tunes T5-base; fairseq
# releases BART): --arch bart_large_gated (or bart_base_gated) restores BART and adds a fresh gate.
#
#   bash recipes/newsroom/bart_gated.sh NEWSROOM_DIR BART_DIR
#     BART_DIR  fairseq's bart.large (or bart.base) release: model.pt, dict.txt, plus the GPT-2 BPE
#               files encoder.json and vocab.bpe (https://dl.fbaipublicfiles.com/fairseq/gpt2_bpe/)
#
# Environment: ARCH (bart_large_gated | bart_base_gated), WORK (data/newsroom-bart), NGPU (1),
# MAX_UPDATE (20000), LAMBDA (0.1), THRESHOLD (0.1), FP16 (1 on GPU), EXTRA (more train flags).
#
# Data as in transformer_gated.sh (documents >= 100 and summaries >= 10 tokens, documents truncated to
# 700 tokens: here GPT-2 BPE tokens, as BART counts them); fine-tuning hyper-parameters are fairseq's
# BART summarization ones (lr 3e-5, polynomial decay, 500 warm-up updates, label smoothing 0.1); the
# best checkpoint is chosen by validation perplexity as in the paper (--best-checkpoint-metric nll_loss).
# Paper's ROUGE-1/2/L: not reported (the paper fine-tunes T5-base); paper's hardware: not stated.
# Data: https://lil.nlp.cornell.edu/newsroom/ (train/dev/test.jsonl.gz). More in recipes/README.md, "Reproducing a paper".
source "$(dirname "$0")/../common.sh"
NEWSROOM=${1:?usage: bart_gated.sh NEWSROOM_DIR BART_DIR}
BART=${2:?usage: bart_gated.sh NEWSROOM_DIR BART_DIR}
ARCH=${ARCH:-bart_large_gated}
WORK=${WORK:-data/newsroom-bart}
gpu_setup 4
MAX_UPDATE=${MAX_UPDATE:-20000}
LAMBDA=${LAMBDA:-0.1}
THRESHOLD=${THRESHOLD:-0.1}
require_int MAX_UPDATE 1
require_number LAMBDA
require_number THRESHOLD
FP16_FLAG=$(fp16_flag)
SAVE="$WORK/checkpoints/$ARCH.l$LAMBDA"
check_bart "$BART"

converted "$WORK/jsonl" "$NEWSROOM" "" newsroom --min-doc-tokens 100 --min-summary-tokens 10 ||
  python -m preprocess.newsroom_to_jsonl --in "$NEWSROOM" --out "$WORK/jsonl" --min-doc-tokens 100 --min-summary-tokens 10
bart_binarize "$WORK/jsonl" "$WORK" "$BART" source target --max-src-tokens 700  # 700 GPT-2 tokens (paper §4.1)

# fine-tune from BART on the first launch; afterwards resume from checkpoint_last.pt (the reset
# flags would otherwise restart from BART)
if [ -f "$SAVE/checkpoint_last.pt" ]; then RESTORE=()
else RESTORE=(--restore-file "$BART/model.pt" --reset-optimizer --reset-dataloader --reset-meters --reset-lr-scheduler); fi
# shellcheck disable=SC2086
train "$WORK/bin" "$SAVE" --arch "$ARCH" $FP16_FLAG ${EXTRA:-} "${RESTORE[@]}" \
  --source-lang source --target-lang target --truncate-source --layernorm-embedding --share-all-embeddings \
  --share-decoder-input-output-embed --required-batch-size-multiple 1 \
  --gate-l1-weight "$LAMBDA" --gate-threshold "$THRESHOLD" \
  --label-smoothing 0.1 --dropout 0.1 --attention-dropout 0.1 --weight-decay 0.01 \
  --optimizer adam --adam-betas '(0.9, 0.999)' --adam-eps 1e-08 --clip-norm 0.1 \
  --lr-scheduler polynomial_decay --lr 3e-05 --total-num-update "$MAX_UPDATE" --warmup-updates 500 \
  --max-update "$MAX_UPDATE" --max-tokens 2048 --update-freq "$UPDATE_FREQ" "${DIST_FLAGS[@]}" \
  --skip-invalid-size-inputs-valid-test --no-epoch-checkpoints \
  --save-interval-updates 2000 --validate-interval-updates 2000 --keep-interval-updates 2 \
  --best-checkpoint-metric nll_loss

for T in 0 "$THRESHOLD"; do
  OUT="$WORK/test.$ARCH.l$LAMBDA.t$T.out"
  # shellcheck disable=SC2086
  generate "$WORK/bin" "$SAVE/checkpoint_best.pt" "$OUT" "gpt2:$BART" --source-lang source --target-lang target \
    --truncate-source --gen-subset test --beam 4 --lenpen 2.0 --max-len-b 128 --min-len 10 --no-repeat-ngram-size 3 \
    --batch-size 16 $FP16_FLAG --model-overrides "{'gate_threshold': $T}"
  grep "sparsity rate" "$OUT.log" || true
  score "$OUT" --no-detok --split-sentences --ref-jsonl "$WORK/jsonl/test.jsonl"
done
