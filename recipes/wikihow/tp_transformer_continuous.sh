#!/usr/bin/env bash
# tp_transformer_continuous_base (TPT-c) on Wikihow (TP-Transformer paper, Table 2).
# Usage: bash recipes/wikihow/tp_transformer_continuous.sh WIKIHOW_CSV [SPLIT_LISTS_DIR]; ARCH=... overrides the preset (e.g. tp_transformer_continuous_small);
# the steps and environment (NGPU, UPDATE_FREQ, MAX_UPDATE, ...) are those of recipes/tp_transformer_run.sh.
# Paper's ROUGE-1/2/L: 28.63/7.82/20.23 (beam 4: 30.13/8.50/20.78); paper's hardware: 4 V100 32GB, batch 32/GPU; training length not stated.
# Data: https://github.com/mahnazkoupaee/WikiHow-Dataset (wikihowAll.csv + all_{train,val,test}.txt). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../tp_transformer_run.sh" wikihow "${ARCH:-tp_transformer_continuous_base}" "$@"
