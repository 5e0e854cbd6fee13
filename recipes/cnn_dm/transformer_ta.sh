#!/usr/bin/env bash
# Transformer + Topic Assistant on CNN/Daily Mail (Topic Assistant paper Table 2: its Transformer baseline). Usage: bash recipes/cnn_dm/transformer_ta.sh CNNDM [URL_LISTS];
# see recipes/topic_assistant_run.sh (ARCH=t5_transformer_default_cell_base for the baseline, EXTRA="--ta-sia False" ... for the modules ablated in Table 7 on BertSUM).
# Paper's ROUGE-1/2/L: no Transformer+TA figure (Table 2: Transformer 40.21/17.76/37.09; TA is reported on BertSUM, BART, UNILM, MASS); paper's hardware: 4 RTX 2080 Ti, 250k updates (PFA: 1 RTX 2080 Ti).
# Data: https://cs.nyu.edu/~kcho/DMQA/ stories + https://github.com/abisee/cnn-dailymail url lists (HF: abisee/cnn_dailymail 3.0.0). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../topic_assistant_run.sh" cnn_dm "$@"
