#!/usr/bin/env bash
# t5_transformer_base (the Transformer baseline) on arXiv (TP-Transformer paper, Table 2).
# Usage: bash recipes/arxiv/t5_transformer.sh ARXIV_DIR; ARCH=... overrides the preset (e.g. t5_transformer_small);
# the steps and environment (NGPU, UPDATE_FREQ, MAX_UPDATE, ...) are those of recipes/tp_transformer_run.sh.
# Paper's ROUGE-1/2/L: 35.00/9.98/31.79 (beam 4: 38.01/11.33/34.02); paper's hardware: 4 V100 32GB, batch 32/GPU; training length not stated.
# Data: https://github.com/armancohan/long-summarization (arxiv-dataset/). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../tp_transformer_run.sh" arxiv "${ARCH:-t5_transformer_base}" "$@"
