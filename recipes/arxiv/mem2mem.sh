#!/usr/bin/env bash
# mem2mem_base on arxiv (Mem2Mem App. A.2). Usage: bash recipes/arxiv/mem2mem.sh ARXIV_DIR; see recipes/mem2mem_run.sh.
exec bash "$(dirname "$0")/../mem2mem_run.sh" arxiv mem2mem_base "$@"
