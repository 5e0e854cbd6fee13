#!/usr/bin/env bash
# arXiv (Cohan et al., 2018) with Mem2Mem's setup (App. A.2; Table 1 and 3 of the paper).
#
#   bash recipes/arxiv/run.sh ARCH ARXIV_DIR [NAME] [extra fairseq-train options...]
#     ARCH        hred_base | mem2mem_base
#     ARXIV_DIR   the released arxiv-dataset/ (train.txt, val.txt, test.txt)
#     NAME        checkpoint/output name (default: ARCH)
#
# Environment: WORK (data/arxiv), MAX_SECTIONS (0: whole articles; 4 keeps the first 4 sections
# like Cohan et al.), and those of recipes/mem2mem_common.sh.
source "$(dirname "$0")/../common.sh"
source "$(dirname "$0")/../mem2mem_common.sh"
ARCH=${1:?usage: run.sh ARCH ARXIV_DIR [NAME] [train options...]}
DATA=${2:?usage: run.sh ARCH ARXIV_DIR [NAME] [train options...]}
NAME=${3:-$ARCH}
shift $(( $# < 3 ? $# : 3 ))
WORK=${WORK:-data/arxiv}

if ! converted "$WORK/jsonl" "$DATA"; then
  python -m preprocess.arxiv_pubmed_to_jsonl --in "$DATA" --out "$WORK/jsonl" --max-sections "${MAX_SECTIONS:-0}"
fi
mem2mem_prepare "$WORK/jsonl" 200
mem2mem_run "$ARCH" "$NAME" 200 "$@"
