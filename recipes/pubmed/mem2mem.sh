#!/usr/bin/env bash
# mem2mem_base on pubmed (Mem2Mem App. A.2). Usage: bash recipes/pubmed/mem2mem.sh PUBMED_DIR; see recipes/mem2mem_run.sh.
exec bash "$(dirname "$0")/../mem2mem_run.sh" pubmed mem2mem_base "$@"
