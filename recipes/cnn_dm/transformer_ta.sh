#!/usr/bin/env bash
# Transformer + Topic Assistant on CNN/Daily Mail (Topic Assistant paper Tables 2, 7). Usage: bash recipes/cnn_dm/transformer_ta.sh CNNDM [URL_LISTS];
# see recipes/topic_assistant_run.sh (ARCH=t5_transformer_base for the baseline, EXTRA="--ta-sia False" ... for Table 7).
exec bash "$(dirname "$0")/../topic_assistant_run.sh" cnn_dm "$@"
