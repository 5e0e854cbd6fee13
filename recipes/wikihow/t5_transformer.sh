#!/usr/bin/env bash
# t5_transformer_base (the Transformer baseline) on Wikihow (TP-Transformer paper, Table 2).
# Usage: bash recipes/wikihow/t5_transformer.sh WIKIHOW_CSV [SPLIT_LISTS_DIR]; ARCH=... overrides the preset (e.g. t5_transformer_small);
# the steps and environment (NGPU, UPDATE_FREQ, MAX_UPDATE, ...) are those of recipes/tp_transformer_run.sh.
exec bash "$(dirname "$0")/../tp_transformer_run.sh" wikihow "${ARCH:-t5_transformer_base}" "$@"
