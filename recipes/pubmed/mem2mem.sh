#!/usr/bin/env bash
# mem2mem_base on pubmed (App. A.2). Usage: bash recipes/pubmed/mem2mem.sh PUBMED_DIR; see run.sh.
exec bash "$(dirname "$0")/run.sh" mem2mem_base "$@"
