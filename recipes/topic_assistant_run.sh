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
#   bash recipes/topic_assistant_run.sh DATASET RAW [AUX]     DATASET: cnn_dm | xsum | nyt
#   (nyt: the licensed corpus as JSONL, recipes/nyt/transformer_ta.sh; summaries cut at 128 pieces,
#   the project's choice: NYT's abstracts average 45 words, Table 1)
#
# Environment: ARCH (transformer_ta_base; t5_transformer_default_cell_base, the same cell without TA,
# for the Transformer baseline of Tables 2-4 -- the paper reports no Transformer+TA figure: its
# Table 7 is an ablation on BertSUM),
# EXTRA (more fairseq-train flags, e.g. "--ta-sia False" for Table 7's ablated modules), WORK
# (data/DATASET-ta), TOPICS (256, App. B / Table 10), TOPICS_N (5), NGPU (1), NNODES (1),
# PAPER_GPUS (4), PAPER_ACCUM (6), UPDATE_FREQ (PAPER_GPUS x PAPER_ACCUM / (NGPU x NNODES), rounded up), MAX_UPDATE (250000,
# App. B), VOCAB (32000), FP16 (1 on GPU), LENPENS ("0.6 0.7 0.8 0.9 1.0": the grid of the length
# penalty alpha tuned on the validation set, App. B), TOP_K (3: checkpoints decoded and averaged),
# SAVE_INTERVAL (1000 updates: checkpoints saved and validated, App. B), NAME (ARCH: the checkpoint
# folder WORK/checkpoints/NAME and the decodings' folder WORK/NAME).
#
# Decoding (§5.1 and App. B, following Liu & Lapata 2019): "select the top-3 checkpoints based on
# their evaluation loss on the validation set, and report the averaged results on the test set" and
# "tuned the alpha for the length penalty between 0.6 and 1 on validation set". Liu & Lapata's code
# (PreSumm) decodes each of the top-3 checkpoints and the paper averages their results: here each
# checkpoint kept by --keep-best-checkpoints TOP_K (fairseq's checkpoint.best_loss_*.pt, the
# lowest validation losses) decodes the test set and is scored; WORK/NAME/test.mean.json holds the
# mean of their ROUGE (not fairseq's scripts/average_checkpoints.py, which averages the weights: the
# paper averages results). alpha is tuned once, on checkpoint_best (lowest validation loss),
# decoding the validation set at each value of LENPENS and keeping the one with the highest mean of
# ROUGE-1/2/L F1 (the paper does not say which ROUGE it tuned: the mean is the project's choice);
# WORK/NAME/lenpen.txt records the grid and the choice.
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
#   top-3 checkpoints by validation loss,        --keep-best-checkpoints 3 (loss); each decoded and
#    averaged results                              scored, the mean of their ROUGE reported
#   beam 5, length penalty alpha in [0.6, 1]     --beam 5 --lenpen-gnmt ALPHA, ALPHA tuned over
#    tuned on validation                           LENPENS on the validation set
source "$(dirname "$0")/common.sh"
USAGE="usage: topic_assistant_run.sh DATASET RAW [AUX]"
DATASET=${1:?$USAGE}
RAW=${2:?$USAGE}
AUX=${3:-}
case $DATASET in
  xsum)   MAX_SRC=512; MAX_TGT=64 ;;
  cnn_dm) MAX_SRC=512; MAX_TGT=128 ;;
  nyt)    MAX_SRC=512; MAX_TGT=128 ;;
  *) echo "unknown DATASET $DATASET (cnn_dm xsum nyt)" >&2; exit 2 ;;
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
LENPENS=${LENPENS:-0.6 0.7 0.8 0.9 1.0}
TOP_K=${TOP_K:-3}
SAVE_INTERVAL=${SAVE_INTERVAL:-1000}
NAME=${NAME:-$ARCH}
for v in MAX_UPDATE VOCAB TOP_K SAVE_INTERVAL; do require_int "$v" 1; done
[ -n "${LENPENS// /}" ] || { echo "${0##*/}: LENPENS is empty" >&2; exit 2; }
for LENPEN in $LENPENS; do require_number LENPEN positive; done
require_name NAME
FP16_FLAG=$(fp16_flag)

convert_dataset "$DATASET" "$RAW" "$AUX" "$WORK/jsonl"
prepare "$WORK/jsonl" "$WORK" --vocab-size "$VOCAB" --max-src-tokens "$MAX_SRC" --max-tgt-tokens "$MAX_TGT" \
  --write-full-src --workers "$(nproc)"

TOPIC_DONE=0
[ -f "$WORK/bin/topic_model.npz" ] && [ -f "$WORK/bin/test.theta.npy" ] && TOPIC_DONE=1
if ! step_gate "topic model" "$WORK/bin/topic_model.npz" "$TOPIC_DONE" --input "data=$WORK/bin" -- --topics "$TOPICS"; then
  log "topic model: $WORK/bin/topic_model.npz exists, skipped"
else
  log "topic model: K=$TOPICS on $WORK/bin train (untruncated documents of $WORK/spm_full)"
  python -m preprocess.topic_model fit "$WORK/bin" --topics "$TOPICS" --full-src "$WORK/spm_full"
fi

# shellcheck disable=SC2086
# the topic proportions feed the Topic Assistant's archs (*_ta_*); the baseline (t5_transformer_default_cell_base)
# trains on the same data, prepared the same way, without them
case $ARCH in *_ta|*_ta_*) TRAIN_SIDE=(--side-data theta --ta-topics-n "$TOPICS_N"); GEN_SIDE=(--side-data theta) ;;
  *) TRAIN_SIDE=(); GEN_SIDE=() ;;
esac
train "$WORK/bin" "$WORK/checkpoints/$NAME" --arch "$ARCH" "${TRAIN_SIDE[@]+"${TRAIN_SIDE[@]}"}" $FP16_FLAG "${DIST_FLAGS[@]}" ${EXTRA:-} \
  --optimizer adam --adam-betas '(0.9, 0.998)' --lr 0.0007 --lr-scheduler inverse_sqrt --warmup-updates 8000 \
  --clip-norm 1 --dropout 0.1 --label-smoothing 0.1 --max-tokens 4096 --update-freq "$UPDATE_FREQ" \
  --max-update "$MAX_UPDATE" --max-source-positions $((MAX_SRC + 8)) --max-target-positions $((MAX_TGT + 16)) \
  --save-interval-updates "$SAVE_INTERVAL" --validate-interval-updates "$SAVE_INTERVAL" --keep-interval-updates 1 \
  --keep-best-checkpoints "$TOP_K" \
  --no-epoch-checkpoints --num-workers 4

ta_decode_top_checkpoints "$WORK" "$NAME" "$MAX_TGT" "$LENPENS" "$TOP_K" "${GEN_SIDE[@]+"${GEN_SIDE[@]}"}" $FP16_FLAG
