#!/usr/bin/env bash
# Mem2Mem's setup (App. A.2) on any of its datasets: convert -> fairseq-sum-prepare -> fairseq-train
# -> fairseq-generate (beam 4) -> fairseq-sum-score, with the steps of recipes/mem2mem_common.sh.
#
#   bash recipes/mem2mem_run.sh DATASET ARCH RAW [NAME] [extra fairseq-train options...]
#     DATASET  pubmed | arxiv (Table 1-3) | newsroom (Table 1, "Newsroom*": tested on the abstractive subset)
#     ARCH     hred_base | mem2mem_base
#     RAW      pubmed / arxiv: the released pubmed-dataset/ or arxiv-dataset/ (train.txt, val.txt,
#              test.txt); newsroom: the release (train/dev/test .jsonl.gz)
#     NAME     checkpoint/output name (default: ARCH), e.g. for the ablations of pubmed/ablation.sh
#
# Environment: WORK (data/DATASET), those of recipes/mem2mem_common.sh, and by DATASET:
#   pubmed, arxiv  MAX_SECTIONS (4) and SECTION_WORDS (500): the converter keeps the first MAX_SECTIONS
#                  sections, each cut after SECTION_WORDS words (whole sentences, the one crossing the
#                  limit cut), and abstracts of at most 200 words -- App. A.2's "maximum number of
#                  sections is set to 4 and the maximum number of tokens for each section is 500"
#                  (--paper-truncation mem2mem; 0: no limit, 0 and 0: the whole article_text); the
#                  model cuts nothing further by default (MAX_SENTS = SENT_TOKENS = 0).
#   newsroom       MAX_LEN_B (60: decoded summaries of at most 60 pieces; Newsroom summaries average
#                  30 tokens, §5.1). References are kept up to MAX_TGT (200) pieces like the other
#                  datasets' (App. A.2): the long tail of Newsroom summaries stays in training and in
#                  the test set (--max-target-positions follows MAX_TGT, not MAX_LEN_B).
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/mem2mem_common.sh"
USAGE="usage: mem2mem_run.sh DATASET ARCH RAW [NAME] [train options...]"
DATASET=${1:?$USAGE}
ARCH=${2:?$USAGE}
DATA=${3:?$USAGE}
NAME=${4:-$ARCH}
shift $(( $# < 4 ? $# : 4 ))
WORK=${WORK:-data/$DATASET}

case $DATASET in
  pubmed|arxiv)
    if ! converted "$WORK/jsonl" "$DATA" "" "$DATASET" --max-sections "${MAX_SECTIONS:-4}" --max-section-words "${SECTION_WORDS:-500}"; then
      python -m preprocess.arxiv_pubmed_to_jsonl --in "$DATA" --out "$WORK/jsonl" --dataset "$DATASET" \
        --paper-truncation mem2mem --max-sections "${MAX_SECTIONS:-4}" --max-section-words "${SECTION_WORDS:-500}"
    fi
    MAX_LEN_B=200 ;;
  newsroom)
    if ! converted "$WORK/jsonl" "$DATA" "" newsroom --density-bin abstractive; then
      python -m preprocess.newsroom_to_jsonl --in "$DATA" --out "$WORK/jsonl" --density-bin abstractive --density-bin-splits test
    fi
    MAX_LEN_B=${MAX_LEN_B:-60} ;;
  *) echo "unknown DATASET $DATASET (pubmed arxiv newsroom)" >&2; exit 2 ;;
esac
mem2mem_prepare "$WORK/jsonl"
mem2mem_run "$ARCH" "$NAME" "$MAX_LEN_B" "$@"
