#!/usr/bin/env bash
# mem2mem_base on arxiv (Mem2Mem App. A.2). Usage: bash recipes/arxiv/mem2mem.sh ARXIV_DIR; see recipes/mem2mem_run.sh.
# Paper's ROUGE-1/2/L: 41.81/14.99/37.24; paper's hardware: hardware not stated; 15 epochs, batch 16.
# Data: https://github.com/armancohan/long-summarization (arxiv-dataset/). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../mem2mem_run.sh" arxiv mem2mem_base "$@"
