#!/usr/bin/env bash
# tp_transformer_base (TPT-d) on CNN/Daily Mail (TP-Transformer paper, Table 2).
# Usage: bash recipes/cnn_dm/tp_transformer.sh CNNDM [URL_LISTS]; ARCH=... overrides the preset (e.g. tp_transformer_small);
# the steps and environment (NGPU, UPDATE_FREQ, MAX_UPDATE, ...) are those of recipes/tp_transformer_run.sh.
exec bash "$(dirname "$0")/../tp_transformer_run.sh" cnn_dm "${ARCH:-tp_transformer_base}" "$@"
