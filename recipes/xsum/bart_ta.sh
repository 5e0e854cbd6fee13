#!/usr/bin/env bash
# BART + Topic Assistant on XSum (Topic Assistant paper Table 5: 45.76/22.68/38.03). Usage:
#   bash recipes/xsum/bart_ta.sh XSUM BART_DIR [SPLIT_FILE]
# see recipes/topic_assistant_bart_run.sh (ARCH=bart_base_ta with bart.base, EXTRA="--ta-sia False" ...).
XSUM=${1:?usage: xsum/bart_ta.sh XSUM BART_DIR [SPLIT_FILE]}
BART=${2:?usage: xsum/bart_ta.sh XSUM BART_DIR [SPLIT_FILE]}
exec bash "$(dirname "$0")/../topic_assistant_bart_run.sh" xsum "$XSUM" "$BART" "${@:3}"
