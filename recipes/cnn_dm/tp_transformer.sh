#!/usr/bin/env bash
# tp_transformer_base (TPT-d) on CNN/Daily Mail (TP-Transformer paper, Table 2).
# Usage: bash recipes/cnn_dm/tp_transformer.sh CNNDM [URL_LISTS]; ARCH=... overrides the preset (e.g. tp_transformer_small);
# the steps and environment (NGPU, UPDATE_FREQ, MAX_UPDATE, ...) are those of recipes/tp_transformer_run.sh.
# Paper's ROUGE-1/2/L: 39.63/17.35/36.80 (beam 4: 41.01/18.38/37.91); paper's hardware: 4 V100 32GB, batch 32/GPU; training length not stated.
# Data: https://cs.nyu.edu/~kcho/DMQA/ stories + https://github.com/abisee/cnn-dailymail url lists (HF: abisee/cnn_dailymail 3.0.0). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../tp_transformer_run.sh" cnn_dm "${ARCH:-tp_transformer_base}" "$@"
