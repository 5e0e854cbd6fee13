#!/usr/bin/env bash
# tp_transformer_base (TPT-d) on Wikihow (TP-Transformer paper, Table 2).
# Usage: bash recipes/wikihow/tp_transformer.sh WIKIHOW_CSV [SPLIT_LISTS_DIR]; ARCH=... overrides the preset (e.g. tp_transformer_small);
# the steps and environment (NGPU, UPDATE_FREQ, MAX_UPDATE, ...) are those of recipes/tp_transformer_run.sh.
# Paper's ROUGE-1/2/L: 34.19/12.47/25.99 (beam 4: 36.70/13.75/27.36); paper's hardware: 4 V100 32GB, batch 32/GPU; training length not stated.
# Data: https://github.com/mahnazkoupaee/WikiHow-Dataset (wikihowAll.csv + all_{train,val,test}.txt). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../tp_transformer_run.sh" wikihow "${ARCH:-tp_transformer_base}" "$@"
