#!/usr/bin/env bash
# hred_base on arxiv (Mem2Mem App. A.2). Usage: bash recipes/arxiv/hred.sh ARXIV_DIR; see recipes/mem2mem_run.sh.
# Paper's ROUGE-1/2/L: not reported; paper's hardware: hardware not stated; 15 epochs, batch 16.
# Data: https://github.com/armancohan/long-summarization (arxiv-dataset/). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../mem2mem_run.sh" arxiv hred_base "$@"
