#!/usr/bin/env bash
# BART + Topic Assistant on CNN/Daily Mail (Topic Assistant paper Table 5: 44.47/21.39/41.32). Usage:
#   bash recipes/cnn_dm/bart_ta.sh CNNDM BART_DIR [URL_LISTS]
# see recipes/topic_assistant_bart_run.sh (ARCH=bart_base_ta with bart.base, EXTRA="--ta-sia False" ...).
# Paper's ROUGE-1/2/L: 44.47/21.39/41.32 (beam 5); paper's hardware: 4 RTX 2080 Ti, 250k updates (PFA: 1 RTX 2080 Ti).
# Data: https://cs.nyu.edu/~kcho/DMQA/ stories + https://github.com/abisee/cnn-dailymail url lists (HF: abisee/cnn_dailymail 3.0.0). More in recipes/README.md, "Reproducing a paper".
CNNDM=${1:?usage: cnn_dm/bart_ta.sh CNNDM BART_DIR [URL_LISTS]}
BART=${2:?usage: cnn_dm/bart_ta.sh CNNDM BART_DIR [URL_LISTS]}
exec bash "$(dirname "$0")/../topic_assistant_bart_run.sh" cnn_dm "$CNNDM" "$BART" "${@:3}"
