#!/usr/bin/env bash
# Newsroom (Grusky et al., 2018) with Mem2Mem's setup (App. A.2); test on the abstractive subset
# (Table 1, "Newsroom*").
#
#   bash recipes/newsroom/run.sh ARCH NEWSROOM_DIR [NAME] [extra fairseq-train options...]
#     ARCH          hred_base | mem2mem_base
#     NEWSROOM_DIR  the release (train/dev/test .jsonl.gz)
#
# Environment: WORK (data/newsroom), MAX_LEN_B (60: decoded summaries of at most 60 pieces; Newsroom
# summaries average 30 tokens, §5.1), and those of recipes/mem2mem_common.sh. References are kept up
# to MAX_TGT (200) pieces like the other datasets' (App. A.2): the long tail of Newsroom summaries
# stays in training and in the test set (--max-target-positions follows MAX_TGT, not MAX_LEN_B).
source "$(dirname "$0")/../common.sh"
source "$(dirname "$0")/../mem2mem_common.sh"
ARCH=${1:?usage: run.sh ARCH NEWSROOM_DIR [NAME] [train options...]}
DATA=${2:?usage: run.sh ARCH NEWSROOM_DIR [NAME] [train options...]}
NAME=${3:-$ARCH}
shift $(( $# < 3 ? $# : 3 ))
WORK=${WORK:-data/newsroom}

if ! converted "$WORK/jsonl" "$DATA"; then
  python -m preprocess.newsroom_to_jsonl --in "$DATA" --out "$WORK/jsonl" --density-bin abstractive --density-bin-splits test
fi
mem2mem_prepare "$WORK/jsonl"
mem2mem_run "$ARCH" "$NAME" "${MAX_LEN_B:-60}" "$@"
