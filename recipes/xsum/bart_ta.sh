#!/usr/bin/env bash
# BART + Topic Assistant on XSum (Topic Assistant paper Table 5: 45.76/22.68/38.03). Usage:
#   bash recipes/xsum/bart_ta.sh XSUM BART_DIR [SPLIT_FILE]
# see recipes/topic_assistant_bart_run.sh (ARCH=bart_base_ta with bart.base, EXTRA="--ta-sia False" ...).
# Paper's ROUGE-1/2/L: 45.76/22.68/38.03 (beam 5); paper's hardware: 4 RTX 2080 Ti, 250k updates (PFA: 1 RTX 2080 Ti).
# Data: https://github.com/EdinburghNLP/XSum (HF: EdinburghNLP/xsum). More in recipes/README.md, "Reproducing a paper".
XSUM=${1:?usage: xsum/bart_ta.sh XSUM BART_DIR [SPLIT_FILE]}
BART=${2:?usage: xsum/bart_ta.sh XSUM BART_DIR [SPLIT_FILE]}
exec bash "$(dirname "$0")/../topic_assistant_bart_run.sh" xsum "$XSUM" "$BART" "${@:3}"
