#!/usr/bin/env bash
# mem2mem_base on arxiv (App. A.2). Usage: bash recipes/arxiv/mem2mem.sh ARXIV_DIR; see run.sh.
exec bash "$(dirname "$0")/run.sh" mem2mem_base "$@"
