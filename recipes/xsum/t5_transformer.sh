#!/usr/bin/env bash
# t5_transformer_base on XSum (paper Table 2). Usage: bash recipes/xsum/t5_transformer.sh XSUM [SPLIT_FILE]; see recipes/tp_transformer_run.sh.
# Paper's ROUGE-1/2/L: 33.22/11.90/26.32 (beam 4: 34.46/12.97/27.21); paper's hardware: 4 V100 32GB, batch 32/GPU; training length not stated.
# Data: https://github.com/EdinburghNLP/XSum (HF: EdinburghNLP/xsum). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../tp_transformer_run.sh" xsum "${ARCH:-t5_transformer_base}" "$@"
