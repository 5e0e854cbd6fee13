#!/usr/bin/env bash
# t5_transformer_base (the Transformer baseline) on Wikihow (TP-Transformer paper, Table 2).
# Usage: bash recipes/wikihow/t5_transformer.sh WIKIHOW_CSV [SPLIT_LISTS_DIR]; ARCH=... overrides the preset (e.g. t5_transformer_small);
# the steps and environment (NGPU, UPDATE_FREQ, MAX_UPDATE, ...) are those of recipes/tp_transformer_run.sh.
# Paper's ROUGE-1/2/L: 33.40/12.18/25.66 (beam 4: 35.91/13.49/27.01); paper's hardware: 4 V100 32GB, batch 32/GPU; training length not stated.
# Data: https://github.com/mahnazkoupaee/WikiHow-Dataset (wikihowAll.csv + all_{train,val,test}.txt). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../tp_transformer_run.sh" wikihow "${ARCH:-t5_transformer_base}" "$@"
