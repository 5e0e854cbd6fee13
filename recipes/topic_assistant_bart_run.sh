#!/usr/bin/env bash
# BART + Topic Assistant (Topic Assistant paper §5.3.2, Table 5) on CNN/DM or XSum: fairseq's pre-trained
# BART fine-tuned with SIA, TEMA and DRM (--arch bart_large_ta restores BART and adds fresh TA parameters):
#   convert -> GPT-2 BPE (preprocess/gpt2_bpe.py) -> fairseq-preprocess with BART's dict.txt -> PFA topic
#   model (K = 256) fitted on the training documents over that dictionary, its GPT-2 ids decoded to text
#   for the stop-word rules, + theta for every split -> fairseq-train --side-data theta (fairseq's BART
#   summarization fine-tuning) -> fairseq-generate (beam 5) -> fairseq-sum-score.
#   BART reads the first MAX_SRC GPT-2 tokens, but the topic model counts the whole document (§5.4):
#   gpt2_bpe --full-src-out writes the untruncated ids to WORK/bpe_full, read by topic_model --full-src
#   (a WORK encoded before that option: remove WORK/bpe to redo the encoding).
# Each step is skipped when its output exists, so re-running resumes (training from checkpoint_last.pt).
#
#   bash recipes/topic_assistant_bart_run.sh DATASET RAW BART_DIR [AUX]     DATASET: cnn_dm | xsum
#     RAW, AUX  as for recipes/topic_assistant_run.sh (the same converters)
#     BART_DIR  fairseq's bart.large (or bart.base) release: model.pt, dict.txt, plus the GPT-2 BPE
#               files encoder.json and vocab.bpe (https://dl.fbaipublicfiles.com/fairseq/gpt2_bpe/)
#
# Environment: TA (1; 0: the BART baseline of Table 5, fairseq's BART fine-tuned without the Topic
# Assistant: no topic model, no theta), ARCH (bart_large_ta, with TA=0 bart_large; bart_base_ta or
# bart_base with bart.base), WORK (data/DATASET-bart-ta), TOPICS
# (256, App. B), TOPICS_N (5), NGPU (1), NNODES (1), UPDATE_FREQ (fairseq's batch of 8 GPUs x 4
# (CNN/DM) or x 2 (XSum) accumulated steps, divided by NGPU x NNODES), MAX_UPDATE (20000 CNN/DM, 15000 XSum: fairseq's
# TOTAL_NUM_UPDATES), FP16 (1: --fp16 on a GPU), MAX_SRC (1023 GPT-2 tokens + </s> = BART's 1024
# positions), MAX_TGT (0: summaries are not truncated), EXTRA (more fairseq-train flags, last, so they
# override the recipe's: e.g. "--ta-sia False", or model dimensions matching a smaller model.pt),
# GEN_EXTRA (more fairseq-generate flags), BATCH (generation batch size, 32), LENPENS (fairseq's
# --lenpen values tried on validation), TOP_K (3), NAME (ARCH: checkpoints WORK/checkpoints/NAME,
# decodings WORK/NAME/).
#
# Paper / fairseq -> flags:
#   PFA, 256 topics, stop words removed,           python -m preprocess.topic_model fit --topics 256
#    all tokens of the document (§5.4)               --gpt2-encoder-json --gpt2-vocab-bpe
#                                                    --full-src WORK/bpe_full (untruncated GPT-2 ids)
#   top-5 topics in TEMA                           --ta-topics-n 5
#   BART's public fine-tuning setup (App. B)       --lr 3e-05 polynomial_decay --warmup-updates 500
#                                                    --label-smoothing 0.1 --max-tokens 2048 --update-freq
#                                                    --clip-norm 0.1 --weight-decay 0.01 --dropout 0.1
#   checkpoints saved and validated every 1000     --save-interval-updates 1000 --keep-best-checkpoints 3
#    updates, top-3 by validation loss, results      (loss); each decodes the test set and is scored,
#    averaged (App. B)                               WORK/NAME/test.mean.json their mean
#                                                    (ta_decode_top_checkpoints in common.sh; a
#                                                    bart.large checkpoint with its Adam state is ~5 GB)
#   beam search, size 5; length penalty tuned on   --beam 5, with fairseq's BART decoding: CNN/DM
#    validation                                      --min-len 55 --max-len-b 140, XSum --min-len 10
#                                                    --max-len-b 60, --no-repeat-ngram-size 3; fairseq's
#                                                    --lenpen tuned over LENPENS on the validation set
#                                                    (default: fairseq's published value alone, CNN/DM
#                                                    2.0, XSum 1.0: "following their settings in public
#                                                    codes"; the paper's [0.6, 1] grid is GNMT's alpha)
# The summaries are one line of text (GPT-2 BPE has no sentence marker): they are scored against the
# converted references (--ref-jsonl) with --split-sentences, so that ROUGE-L is summary-level.
source "$(dirname "$0")/common.sh"
USAGE="usage: topic_assistant_bart_run.sh DATASET RAW BART_DIR [AUX]"
DATASET=${1:?$USAGE}
RAW=${2:?$USAGE}
BART=${3:?$USAGE}
AUX=${4:-}
case $DATASET in
  cnn_dm) FAIRSEQ_FREQ=4; DEFAULT_UPDATES=20000; DEFAULT_LENPENS=2.0; MAX_LEN_B=140; GEN=(--min-len 55) ;;
  xsum)   FAIRSEQ_FREQ=2; DEFAULT_UPDATES=15000; DEFAULT_LENPENS=1.0; MAX_LEN_B=60; GEN=(--min-len 10) ;;
  *) echo "unknown DATASET $DATASET (cnn_dm xsum)" >&2; exit 2 ;;
esac
TA=${TA:-1}
case $TA in
  1) ARCH=${ARCH:-bart_large_ta}; TA_FLAGS=(--side-data theta) ;;
  0) ARCH=${ARCH:-bart_large}; TA_FLAGS=()
     case $ARCH in *_ta) echo "${0##*/}: TA=0 trains BART without the Topic Assistant: ARCH $ARCH is a Topic Assistant model (give ${ARCH%_ta})" >&2; exit 2 ;; esac ;;
  *) echo "${0##*/}: TA must be 1 or 0, got '$TA'" >&2; exit 2 ;;
esac
WORK=${WORK:-data/$DATASET-bart-ta}
TOPICS=${TOPICS:-256}
TOPICS_N=${TOPICS_N:-5}
gpu_setup 8 "$FAIRSEQ_FREQ"
MAX_UPDATE=${MAX_UPDATE:-$DEFAULT_UPDATES}
MAX_SRC=${MAX_SRC:-1023}
MAX_TGT=${MAX_TGT:-0}
BATCH=${BATCH:-32}
LENPENS=${LENPENS:-$DEFAULT_LENPENS}
TOP_K=${TOP_K:-3}
NAME=${NAME:-$ARCH}
for v in TOPICS TOPICS_N MAX_UPDATE MAX_SRC BATCH TOP_K; do require_int "$v" 1; done
[ -n "${LENPENS// /}" ] || { echo "${0##*/}: LENPENS is empty" >&2; exit 2; }
for LENPEN in $LENPENS; do require_number LENPEN positive; done
require_name NAME
require_int MAX_TGT 0
FP16_FLAG=$(fp16_flag)
SAVE="$WORK/checkpoints/$NAME"
check_bart "$BART"
GPT2=(--gpt2-encoder-json "$BART/encoder.json" --gpt2-vocab-bpe "$BART/vocab.bpe")

convert_dataset "$DATASET" "$RAW" "$AUX" "$WORK/jsonl"

bart_binarize "$WORK/jsonl" "$WORK" "$BART" src tgt --max-src-tokens "$MAX_SRC" --max-tgt-tokens "$MAX_TGT" \
  --full-src-out "$WORK/bpe_full"

if [ "$TA" = 0 ]; then log "topic model: not used (TA=0)"
elif ! step_gate "topic model" "$WORK/bin/topic_model.npz" "$([ -f "$WORK/bin/topic_model.npz" ] && [ -f "$WORK/bin/test.theta.npy" ] && echo 1 || echo 0)" \
  --input "data=$WORK/bin" -- --topics "$TOPICS" gpt2; then
  log "topic model: $WORK/bin/topic_model.npz exists, skipped"
else
  log "topic model: K=$TOPICS on $WORK/bin train (GPT-2 symbols decoded; untruncated documents of $WORK/bpe_full)"
  python -m preprocess.topic_model fit "$WORK/bin" --topics "$TOPICS" "${GPT2[@]}" --full-src "$WORK/bpe_full"
fi

# fine-tune from BART on the first launch; afterwards resume from checkpoint_last.pt (the reset
# flags would otherwise restart from BART)
if [ -f "$SAVE/checkpoint_last.pt" ]; then RESTORE=()
else RESTORE=(--restore-file "$BART/model.pt" --reset-optimizer --reset-dataloader --reset-meters --reset-lr-scheduler); fi
# shellcheck disable=SC2086
train "$WORK/bin" "$SAVE" --arch "$ARCH" "${RESTORE[@]}" --source-lang src --target-lang tgt \
  "${TA_FLAGS[@]}" ${TA_FLAGS[0]:+--ta-topics-n "$TOPICS_N"} --truncate-source --layernorm-embedding --share-all-embeddings \
  --share-decoder-input-output-embed --required-batch-size-multiple 1 \
  --label-smoothing 0.1 --dropout 0.1 --attention-dropout 0.1 --weight-decay 0.01 \
  --optimizer adam --adam-betas '(0.9, 0.999)' --adam-eps 1e-08 --clip-norm 0.1 \
  --lr-scheduler polynomial_decay --lr 3e-05 --total-num-update "$MAX_UPDATE" --warmup-updates 500 \
  --max-update "$MAX_UPDATE" --max-tokens 2048 --update-freq "$UPDATE_FREQ" $FP16_FLAG "${DIST_FLAGS[@]}" \
  --skip-invalid-size-inputs-valid-test --no-epoch-checkpoints \
  --save-interval-updates 1000 --validate-interval-updates 1000 --keep-interval-updates 1 --keep-best-checkpoints "$TOP_K" \
  ${EXTRA:-}

TA_LENPEN_FLAG=--lenpen
TA_SCORE_FLAGS=(--no-detok --split-sentences --ref-jsonl "$WORK/jsonl/{split}.jsonl")
# shellcheck disable=SC2086
ta_decode_top_checkpoints "$WORK" "$NAME" "$MAX_LEN_B" "$LENPENS" "$TOP_K" "gpt2:$BART" --source-lang src \
  --target-lang tgt "${TA_FLAGS[@]}" --truncate-source "${GEN[@]}" --no-repeat-ngram-size 3 $FP16_FLAG ${GEN_EXTRA:-}
