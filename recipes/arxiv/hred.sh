#!/usr/bin/env bash
# hred_base on arxiv (Mem2Mem App. A.2). Usage: bash recipes/arxiv/hred.sh ARXIV_DIR; see recipes/mem2mem_run.sh.
exec bash "$(dirname "$0")/../mem2mem_run.sh" arxiv hred_base "$@"
