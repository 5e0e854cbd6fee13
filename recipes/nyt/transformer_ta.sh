#!/usr/bin/env bash
# Transformer + Topic Assistant on the New York Times Annotated Corpus (Topic Assistant Table 4).
# Usage: bash recipes/nyt/transformer_ta.sh NYT_JSONL; see recipes/topic_assistant_run.sh.
#   NYT_JSONL  the corpus extracted by you to JSONL (`article`, `abstract`, optionally `date` /
#              `split`): a file, or a folder with train/valid/test.jsonl (preprocess/nyt_to_jsonl.py)
# The corpus is licensed (LDC2008T19, https://catalog.ldc.upenn.edu/LDC2008T19): nothing here
# downloads it, and without it this recipe stops before any work. Conversion: Liu (2019)'s split by
# date (test: published from 2007-01-01; 4,000 training articles held out for validation) and the
# filter of summaries under 50 words (App. A: 3,452 test articles), `--min-summary-words 50`.
# Paper's ROUGE-1/2/L: no Transformer+TA figure (Table 4: Transformer 35.75/17.23/31.41, BertSUM+TA
# 50.12/32.08/46.67); paper's hardware: 4 RTX 2080 Ti, 250k updates.
set -euo pipefail
NYT=${1:-}
if [ -z "$NYT" ] || { [ ! -f "$NYT" ] && ! ls "$NYT"/*.jsonl >/dev/null 2>&1; }; then
  cat >&2 <<MSG
${0##*/}: needs the New York Times Annotated Corpus as JSONL${NYT:+ (got '$NYT': no such file, nor a folder of .jsonl files)}.
  The corpus is licensed by the LDC (LDC2008T19, https://catalog.ldc.upenn.edu/LDC2008T19) and is not
  available here. Extract its articles and online abstracts to JSONL (one object a line: "article",
  "abstract", "date" YYYY-MM-DD) and run: bash recipes/nyt/transformer_ta.sh NYT.jsonl
MSG
  exit 2
fi
exec bash "$(dirname "$0")/../topic_assistant_run.sh" nyt "$NYT"
