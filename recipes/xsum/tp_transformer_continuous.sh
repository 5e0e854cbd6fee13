#!/usr/bin/env bash
# tp_transformer_continuous_base on XSum (paper Table 2). Usage: bash recipes/xsum/tp_transformer_continuous.sh XSUM [SPLIT_FILE]; see recipes/tp_transformer_run.sh.
# Paper's ROUGE-1/2/L: 30.74/10.23/24.32 (beam 4: 32.01/11.26/25.19); paper's hardware: 4 V100 32GB, batch 32/GPU; training length not stated.
# Data: https://github.com/EdinburghNLP/XSum (HF: EdinburghNLP/xsum). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../tp_transformer_run.sh" xsum "${ARCH:-tp_transformer_continuous_base}" "$@"
