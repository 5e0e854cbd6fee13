#!/usr/bin/env bash
# t5_transformer_base (the Transformer baseline) on CNN/Daily Mail (TP-Transformer paper, Table 2).
# Usage: bash recipes/cnn_dm/t5_transformer.sh CNNDM [URL_LISTS]; ARCH=... overrides the preset (e.g. t5_transformer_small);
# the steps and environment (NGPU, UPDATE_FREQ, MAX_UPDATE, ...) are those of recipes/tp_transformer_run.sh.
exec bash "$(dirname "$0")/../tp_transformer_run.sh" cnn_dm "${ARCH:-t5_transformer_base}" "$@"
