#!/usr/bin/env bash
# tp_transformer_continuous_base (TPT-c) on arXiv (TP-Transformer paper, Table 2).
# Usage: bash recipes/arxiv/tp_transformer_continuous.sh ARXIV_DIR; ARCH=... overrides the preset (e.g. tp_transformer_continuous_small);
# the steps and environment (NGPU, UPDATE_FREQ, MAX_UPDATE, ...) are those of recipes/tp_transformer_run.sh.
# Paper's ROUGE-1/2/L: 32.46/7.53/29.47 (beam 4: 34.68/8.50/31.15); paper's hardware: 4 V100 32GB, batch 32/GPU; training length not stated.
# Data: https://github.com/armancohan/long-summarization (arxiv-dataset/). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../tp_transformer_run.sh" arxiv "${ARCH:-tp_transformer_continuous_base}" "$@"
