#!/usr/bin/env bash
# The TP-Transformer paper's setup (Jiang et al., 2021, §3.2 and App. B) on any of its four datasets:
# 6+6 layers, d_m 512, 8 heads, d_f 2048, trained from scratch with Adafactor, square-root
# learning-rate decay, dropout 0.1, batch 32 per GPU x 4 GPUs (emulated with --update-freq on fewer
# GPUs); dev and test decoding with beam 1 and beam 4, scored with ROUGE-1/2/L F1 and METEOR 1.5
# (Table 2 reports all eight cells of each model). The paper does not state its learning rate, its
# number of updates, its truncation of documents and summaries or how it picks its checkpoint: the
# values below for those are the project's choice.
#
#   bash recipes/tp_transformer_run.sh DATASET ARCH RAW [AUX]
#     DATASET  xsum | wikihow | arxiv | pubmed | cnn_dm
#     ARCH     t5_transformer_base | tp_transformer_base | tp_transformer_continuous_base (App. B's
#              T5-cell models; the *_default_cell_base presets are the pre-norm default cell, and
#              a *_small preset is for a CPU smoke run)
#     RAW      the raw data, by DATASET:
#                xsum     HF `xsum` JSONL (file or dir), or the raw BBC dir (then AUX = the split JSON)
#                wikihow  wikihowAll.csv (AUX: dir with the official all_train/all_val/all_test.txt)
#                arxiv    the released arxiv-dataset/ dir (train.txt, val.txt, test.txt); pubmed alike
#                cnn_dm   HF `cnn_dailymail` JSONL (file or dir), or "cnn/stories dailymail/stories"
#                         (quoted; then AUX = abisee's url_lists dir)
#
# Steps: convert (preprocess/*_to_jsonl.py --stats: our corpus statistics beside the papers') ->
# fairseq-sum-prepare -> fairseq-train -> fairseq-generate (beam 1, 4) -> fairseq-sum-score. Each
# step is skipped when its output exists, so re-running resumes (training from checkpoint_last.pt).
#
# Environment: WORK (data/DATASET-tpt), NGPU (GPUs per node, 1) and NNODES (1) (gpu_setup in
# common.sh), PAPER_GPUS (4), UPDATE_FREQ (PAPER_GPUS / (NGPU x NNODES), rounded up), BATCH (32 per GPU), MAX_UPDATE (200000: the paper does not state
# its step count), FP16 (1: --fp16 when a GPU is there), VOCAB (32000), MAX_SRC / MAX_TGT (subword
# pieces kept by fairseq-sum-prepare; per-dataset defaults below, the paper does not state them),
# BEAMS ("1 4"), SPLITS ("valid test": Table 2's Dev and Test), METEOR (1.5: Meteor Universal
# 1.5's jar, `scripts/install.sh --meteor15`, as Table 2; nltk: nltk's METEOR when the jar is not
# installed; 0: ROUGE only), NAME (ARCH: the checkpoint folder and the outputs'
# WORK/SPLIT.NAME.beamB.out), SAVE_INTERVAL (5000 updates), EXTRA (more fairseq-train flags).
#
# The project's choices where the paper is silent: MAX_UPDATE 200000, lr 0.01 with 10k warm-up
# updates (below), MAX_SRC / MAX_TGT per dataset (below), the checkpoint with the best validation
# ROUGE-L at beam 1.
#
# Schedule: Adafactor at lr 0.01 for 10k updates, then 0.01 * sqrt(10000 / step) = 1/sqrt(step),
# the T5 "inverse square root" schedule the paper's Transformer baseline is built on
# (fairseq's inverse_sqrt with warmup-init-lr = lr). T5's Adafactor scales each update by the
# parameter's RMS (multiply_by_parameter_scale, --scale-parameter here); without it a step of 0.01
# is ~1/3 of a weight's size at initialisation. No label smoothing: the paper states none and T5
# uses none.
source "$(dirname "$0")/common.sh"
USAGE="usage: tp_transformer_run.sh DATASET ARCH RAW [AUX]"
DATASET=${1:?$USAGE}
ARCH=${2:?$USAGE}
RAW=${3:?$USAGE}
AUX=${4:-}
case $DATASET in
  xsum)         SRC_DEFAULT=512;  TGT_DEFAULT=64 ;;
  wikihow)      SRC_DEFAULT=512;  TGT_DEFAULT=128 ;;
  cnn_dm)       SRC_DEFAULT=512;  TGT_DEFAULT=128 ;;
  arxiv|pubmed) SRC_DEFAULT=1024; TGT_DEFAULT=256 ;;
  *) echo "unknown DATASET $DATASET (xsum wikihow arxiv pubmed cnn_dm)" >&2; exit 2 ;;
esac
WORK=${WORK:-data/$DATASET-tpt}
PAPER_GPUS=${PAPER_GPUS:-4}
require_int PAPER_GPUS 1
gpu_setup "$PAPER_GPUS"
BATCH=${BATCH:-32}
MAX_UPDATE=${MAX_UPDATE:-200000}
VOCAB=${VOCAB:-32000}
MAX_SRC=${MAX_SRC:-$SRC_DEFAULT}
MAX_TGT=${MAX_TGT:-$TGT_DEFAULT}
BEAMS=${BEAMS:-1 4}
SAVE_INTERVAL=${SAVE_INTERVAL:-5000}
SPLITS=${SPLITS:-valid test}
METEOR=${METEOR:-1.5}
NAME=${NAME:-$ARCH}
case $METEOR in
  1.5|nltk) METEOR_FLAGS=(--meteor --meteor-impl "$METEOR") ;;
  0) METEOR_FLAGS=() ;;
  *) echo "${0##*/}: METEOR must be 1.5, nltk or 0, got '$METEOR'" >&2; exit 2 ;;
esac
for split in $SPLITS; do
  case $split in valid|test) ;; *) echo "${0##*/}: SPLITS: unknown split '$split' (valid test)" >&2; exit 2 ;; esac
done
for BEAM in $BEAMS; do require_int BEAM 1; done
require_name NAME
for v in BATCH MAX_UPDATE VOCAB MAX_SRC MAX_TGT SAVE_INTERVAL; do require_int "$v" 1; done
FP16_FLAG=$(fp16_flag)

convert_dataset "$DATASET" "$RAW" "$AUX" "$WORK/jsonl"
prepare "$WORK/jsonl" "$WORK" --vocab-size "$VOCAB" --max-src-tokens "$MAX_SRC" --max-tgt-tokens "$MAX_TGT" --workers "$(nproc)"

# shellcheck disable=SC2086
train "$WORK/bin" "$WORK/checkpoints/$NAME" --arch "$ARCH" $FP16_FLAG "${DIST_FLAGS[@]}" ${EXTRA:-} \
  --optimizer adafactor --scale-parameter --lr 0.01 --lr-scheduler inverse_sqrt --warmup-updates 10000 \
  --warmup-init-lr 0.01 --dropout 0.1 --label-smoothing 0 --batch-size "$BATCH" --update-freq "$UPDATE_FREQ" --max-update "$MAX_UPDATE" \
  --max-source-positions $((MAX_SRC + 8)) --max-target-positions $((MAX_TGT + 16)) --num-workers 4 \
  --eval-rouge --eval-rouge-args "{\"beam\": 1, \"max_len_b\": $MAX_TGT}" \
  --best-checkpoint-metric rouge_l --maximize-best-checkpoint-metric \
  --save-interval-updates "$SAVE_INTERVAL" --validate-interval-updates "$SAVE_INTERVAL" --keep-interval-updates 2 \
  --no-epoch-checkpoints

for SPLIT in $SPLITS; do
  for BEAM in $BEAMS; do
    OUT="$WORK/$SPLIT.$NAME.beam$BEAM.out"
    generate "$WORK/bin" "$WORK/checkpoints/$NAME/checkpoint_best.pt" "$OUT" \
      --gen-subset "$SPLIT" --beam "$BEAM" --batch-size 64 --max-len-a 0 --max-len-b "$MAX_TGT" $FP16_FLAG
    score "$OUT" "${METEOR_FLAGS[@]}"
  done
done
