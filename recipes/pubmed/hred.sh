#!/usr/bin/env bash
# hred_base on pubmed (Mem2Mem App. A.2). Usage: bash recipes/pubmed/hred.sh PUBMED_DIR; see recipes/mem2mem_run.sh.
exec bash "$(dirname "$0")/../mem2mem_run.sh" pubmed hred_base "$@"
