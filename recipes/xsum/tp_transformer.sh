#!/usr/bin/env bash
# tp_transformer_base on XSum (paper Table 2). Usage: bash recipes/xsum/tp_transformer.sh XSUM [SPLIT_FILE]; see run.sh.
exec bash "$(dirname "$0")/run.sh" "${ARCH:-tp_transformer_base}" "$@"
