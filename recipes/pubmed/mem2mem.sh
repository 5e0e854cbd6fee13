#!/usr/bin/env bash
# mem2mem_base on pubmed (Mem2Mem App. A.2). Usage: bash recipes/pubmed/mem2mem.sh PUBMED_DIR; see recipes/mem2mem_run.sh.
# Paper's ROUGE-1/2/L: 42.06/16.56/38.11; paper's hardware: hardware not stated; 15 epochs, batch 16.
# Data: https://github.com/armancohan/long-summarization (pubmed-dataset/). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../mem2mem_run.sh" pubmed mem2mem_base "$@"
