#!/usr/bin/env bash
# t5_transformer_base on XSum (paper Table 2). Usage: bash recipes/xsum/t5_transformer.sh XSUM [SPLIT_FILE]; see recipes/tp_transformer_run.sh.
exec bash "$(dirname "$0")/../tp_transformer_run.sh" xsum "${ARCH:-t5_transformer_base}" "$@"
