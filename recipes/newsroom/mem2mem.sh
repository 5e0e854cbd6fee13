#!/usr/bin/env bash
# mem2mem_base on newsroom (Mem2Mem App. A.2). Usage: bash recipes/newsroom/mem2mem.sh NEWSROOM_DIR; see recipes/mem2mem_run.sh.
# Paper's ROUGE-1/2/L: 20.00/6.60/16.80 (abstractive test subset); paper's hardware: hardware not stated; 15 epochs, batch 16.
# Data: https://lil.nlp.cornell.edu/newsroom/ (train/dev/test.jsonl.gz). More in recipes/README.md, "Reproducing a paper".
exec bash "$(dirname "$0")/../mem2mem_run.sh" newsroom mem2mem_base "$@"
