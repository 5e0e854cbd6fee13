#!/usr/bin/env bash
# t5_transformer_base on XSum (paper Table 2). Usage: bash recipes/xsum/t5_transformer.sh XSUM [SPLIT_FILE]; see run.sh.
exec bash "$(dirname "$0")/run.sh" "${ARCH:-t5_transformer_base}" "$@"
