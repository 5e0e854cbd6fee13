#!/usr/bin/env bash
# BART + Topic Assistant on CNN/Daily Mail (Topic Assistant paper Table 5: 44.47/21.39/41.32). Usage:
#   bash recipes/cnn_dm/bart_ta.sh CNNDM BART_DIR [URL_LISTS]
# see recipes/topic_assistant_bart_run.sh (ARCH=bart_base_ta with bart.base, EXTRA="--ta-sia False" ...).
CNNDM=${1:?usage: cnn_dm/bart_ta.sh CNNDM BART_DIR [URL_LISTS]}
BART=${2:?usage: cnn_dm/bart_ta.sh CNNDM BART_DIR [URL_LISTS]}
exec bash "$(dirname "$0")/../topic_assistant_bart_run.sh" cnn_dm "$CNNDM" "$BART" "${@:3}"
