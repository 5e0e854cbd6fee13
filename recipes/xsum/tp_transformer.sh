#!/usr/bin/env bash
# tp_transformer_base on XSum (paper Table 2). Usage: bash recipes/xsum/tp_transformer.sh XSUM [SPLIT_FILE]; see recipes/tp_transformer_run.sh.
exec bash "$(dirname "$0")/../tp_transformer_run.sh" xsum "${ARCH:-tp_transformer_base}" "$@"
