#!/usr/bin/env bash
# Topic Assistant (§5.2, App. B) on CNN/DM or XSum with this family's transformer:
#   convert -> fairseq-sum-prepare -> PFA topic model (K = 256, fitted on the training documents over
#   the summarizer's dictionary) + theta for every split -> fairseq-train --side-data theta ->
#   fairseq-generate (beam 5) -> fairseq-sum-score. Each step is skipped when its output exists.
#   The encoder reads the first MAX_SRC pieces of a document, but the topic model counts every token
#   (§5.4: global semantics "from all tokens in the document"): prepare --write-full-src keeps the
#   untruncated pieces in WORK/spm_full, read by topic_model --full-src (a WORK prepared before that
#   option: remove WORK/bin/prepare_args.json to redo the encoding).
#
#   bash recipes/topic_assistant_run.sh DATASET RAW [AUX]     DATASET: cnn_dm | xsum
#
# Environment: ARCH (transformer_ta_base; t5_transformer_base for the baseline of Table 7),
# EXTRA (more fairseq-train flags, e.g. "--ta-sia False" for the ablation of Table 7), WORK
# (data/DATASET-ta), TOPICS (256, App. B / Table 10), TOPICS_N (5), NGPU (1), NNODES (1),
# PAPER_GPUS (4), PAPER_ACCUM (6), UPDATE_FREQ (PAPER_GPUS x PAPER_ACCUM / (NGPU x NNODES), rounded up), MAX_UPDATE (250000,
# App. B), VOCAB (32000), FP16 (1 on GPU), LENPEN (0.8: the paper tunes alpha in [0.6, 1] on the
# validation set).
#
# Paper -> flags:
#   PFA, 256 topics, stop words removed,         python -m preprocess.topic_model fit --topics 256
#    all tokens of the document (§5.4)             --full-src WORK/spm_full (untruncated pieces)
#   top-5 topics in TEMA                         --ta-topics-n 5
#   "mini-batch of 200 summary tokens, gradient  --max-tokens 4096 (a token budget that fits one GPU; the
#    accumulation every six iterations", 4 GPUs    paper's BertSUM batches) --update-freq PAPER_GPUS x
#                                                  PAPER_ACCUM / NGPU = 24 / NGPU: an update sums
#                                                  4 GPUs x 6 accumulated batches, as the paper's
#   250,000 updates, checkpoints every 1000      --max-update 250000 --save-interval-updates 1000
#   top-3 checkpoints by validation loss         --keep-best-checkpoints 3 (loss), averaged by
#                                                  scripts/average_checkpoints.py of fairseq if wanted
#   beam 5, length penalty alpha in [0.6, 1]     --beam 5 --lenpen-gnmt $LENPEN
source "$(dirname "$0")/common.sh"
USAGE="usage: topic_assistant_run.sh DATASET RAW [AUX]"
DATASET=${1:?$USAGE}
RAW=${2:?$USAGE}
AUX=${3:-}
case $DATASET in
  xsum)   MAX_SRC=512; MAX_TGT=64 ;;
  cnn_dm) MAX_SRC=512; MAX_TGT=128 ;;
  *) echo "unknown DATASET $DATASET (cnn_dm xsum)" >&2; exit 2 ;;
esac
ARCH=${ARCH:-transformer_ta_base}
WORK=${WORK:-data/$DATASET-ta}
TOPICS=${TOPICS:-256}
TOPICS_N=${TOPICS_N:-5}
PAPER_GPUS=${PAPER_GPUS:-4}
PAPER_ACCUM=${PAPER_ACCUM:-6}
for v in TOPICS TOPICS_N PAPER_GPUS PAPER_ACCUM; do require_int "$v" 1; done
gpu_setup "$PAPER_GPUS" "$PAPER_ACCUM"
MAX_UPDATE=${MAX_UPDATE:-250000}
VOCAB=${VOCAB:-32000}
LENPEN=${LENPEN:-0.8}
for v in MAX_UPDATE VOCAB; do require_int "$v" 1; done
require_number LENPEN
FP16_FLAG=$(fp16_flag)

convert_dataset "$DATASET" "$RAW" "$AUX" "$WORK/jsonl"
prepare "$WORK/jsonl" "$WORK" --vocab-size "$VOCAB" --max-src-tokens "$MAX_SRC" --max-tgt-tokens "$MAX_TGT" \
  --write-full-src --workers "$(nproc)"

if [ -f "$WORK/bin/test.theta.npy" ]; then log "topic model: $WORK/bin/topic_model.npz exists, skipped"
else
  log "topic model: K=$TOPICS on $WORK/bin train (untruncated documents of $WORK/spm_full)"
  python -m preprocess.topic_model fit "$WORK/bin" --topics "$TOPICS" --full-src "$WORK/spm_full"
fi

# shellcheck disable=SC2086
train "$WORK/bin" "$WORK/checkpoints/$ARCH" --arch "$ARCH" --side-data theta --ta-topics-n "$TOPICS_N" $FP16_FLAG "${DIST_FLAGS[@]}" ${EXTRA:-} \
  --optimizer adam --adam-betas '(0.9, 0.998)' --lr 0.0007 --lr-scheduler inverse_sqrt --warmup-updates 8000 \
  --clip-norm 1 --dropout 0.1 --label-smoothing 0.1 --max-tokens 4096 --update-freq "$UPDATE_FREQ" \
  --max-update "$MAX_UPDATE" --max-source-positions $((MAX_SRC + 8)) --max-target-positions $((MAX_TGT + 16)) \
  --save-interval-updates 1000 --validate-interval-updates 1000 --keep-interval-updates 1 --keep-best-checkpoints 3 \
  --no-epoch-checkpoints --num-workers 4

OUT="$WORK/test.$ARCH.beam5.out"
generate "$WORK/bin" "$WORK/checkpoints/$ARCH/checkpoint_best.pt" "$OUT" --side-data theta \
  --gen-subset test --beam 5 --max-len-a 0 --max-len-b "$MAX_TGT" --batch-size 32 --lenpen-gnmt "$LENPEN" $FP16_FLAG
score "$OUT"
