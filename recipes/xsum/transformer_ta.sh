#!/usr/bin/env bash
# Transformer + Topic Assistant on XSum (Topic Assistant paper Tables 3, 7). Usage: bash recipes/xsum/transformer_ta.sh XSUM [SPLIT_FILE];
# see recipes/topic_assistant_run.sh (ARCH=t5_transformer_base for the baseline, EXTRA="--ta-sia False" ... for Table 7).
exec bash "$(dirname "$0")/../topic_assistant_run.sh" xsum "$@"
