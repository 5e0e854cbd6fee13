#!/usr/bin/env bash
# Transformer + Topic Assistant on XSum (Topic Assistant paper Tables 3, 7). Usage: bash recipes/xsum/transformer_ta.sh XSUM [SPLIT_FILE];
# see recipes/topic_assistant_run.sh (ARCH=t5_transformer_base for the baseline, EXTRA="--ta-sia False" ... for Table 7).
# Paper's ROUGE-1/2/L: Table 7 (baseline Transformer 29.41/9.77/23.01); paper's hardware: 4 RTX 2080 Ti, 250k updates (PFA: 1 RTX 2080 Ti).
# Data: https://github.com/EdinburghNLP/XSum (HF: EdinburghNLP/xsum). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../topic_assistant_run.sh" xsum "$@"
