#!/usr/bin/env bash
# Transformer + Topic Assistant on XSum (Topic Assistant paper Table 3: its Transformer baseline). Usage: bash recipes/xsum/transformer_ta.sh XSUM [SPLIT_FILE];
# see recipes/topic_assistant_run.sh (ARCH=t5_transformer_default_cell_base for the baseline, EXTRA="--ta-sia False" ... for the modules ablated in Table 7 on BertSUM).
# Paper's ROUGE-1/2/L: no Transformer+TA figure (Table 3: Transformer 29.41/9.77/23.01; TA is reported on BertSUM, BART, UNILM, MASS); paper's hardware: 4 RTX 2080 Ti, 250k updates (PFA: 1 RTX 2080 Ti).
# Data: https://github.com/EdinburghNLP/XSum (HF: EdinburghNLP/xsum). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../topic_assistant_run.sh" xsum "$@"
