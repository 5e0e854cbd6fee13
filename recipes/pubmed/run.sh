#!/usr/bin/env bash
# PubMed (Cohan et al., 2018) with Mem2Mem's setup (App. A.2; Table 1 and 2 of the paper).
#
#   bash recipes/pubmed/run.sh ARCH PUBMED_DIR [NAME] [extra fairseq-train options...]
#     ARCH        hred_base | mem2mem_base
#     PUBMED_DIR  the released pubmed-dataset/ (train.txt, val.txt, test.txt)
#     NAME        checkpoint/output name (default: ARCH), e.g. for the ablations of ablation.sh
#
# Environment: WORK (data/pubmed), MAX_SECTIONS (4) and SECTION_WORDS (500): the converter keeps the
# first MAX_SECTIONS sections, each cut after SECTION_WORDS words (whole sentences, the one crossing
# the limit cut), and abstracts of at most 200 words -- App. A.2's "maximum number of sections is set
# to 4 and the maximum number of tokens for each section is 500" (--paper-truncation mem2mem; 0: no
# limit, 0 and 0: the whole article_text); and those of recipes/mem2mem_common.sh (the model cuts
# nothing further by default: MAX_SENTS = SENT_TOKENS = 0).
source "$(dirname "$0")/../common.sh"
source "$(dirname "$0")/../mem2mem_common.sh"
ARCH=${1:?usage: run.sh ARCH PUBMED_DIR [NAME] [train options...]}
DATA=${2:?usage: run.sh ARCH PUBMED_DIR [NAME] [train options...]}
NAME=${3:-$ARCH}
shift $(( $# < 3 ? $# : 3 ))
WORK=${WORK:-data/pubmed}

if ! converted "$WORK/jsonl" "$DATA"; then
  python -m preprocess.arxiv_pubmed_to_jsonl --in "$DATA" --out "$WORK/jsonl" --dataset pubmed --paper-truncation mem2mem \
    --max-sections "${MAX_SECTIONS:-4}" --max-section-words "${SECTION_WORDS:-500}"
fi
mem2mem_prepare "$WORK/jsonl"
mem2mem_run "$ARCH" "$NAME" 200 "$@"
