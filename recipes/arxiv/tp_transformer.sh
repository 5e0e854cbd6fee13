#!/usr/bin/env bash
# tp_transformer_base (TPT-d) on arXiv (TP-Transformer paper, Table 2).
# Usage: bash recipes/arxiv/tp_transformer.sh ARXIV_DIR; ARCH=... overrides the preset (e.g. tp_transformer_small);
# the steps and environment (NGPU, UPDATE_FREQ, MAX_UPDATE, ...) are those of recipes/tp_transformer_run.sh.
# Paper's ROUGE-1/2/L: 35.82/10.12/32.46 (beam 4: 38.36/11.43/34.29); paper's hardware: 4 V100 32GB, batch 32/GPU; training length not stated.
# Data: https://github.com/armancohan/long-summarization (arxiv-dataset/). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../tp_transformer_run.sh" arxiv "${ARCH:-tp_transformer_base}" "$@"
