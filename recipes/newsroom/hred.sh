#!/usr/bin/env bash
# hred_base on newsroom (Mem2Mem App. A.2). Usage: bash recipes/newsroom/hred.sh NEWSROOM_DIR; see recipes/mem2mem_run.sh.
exec bash "$(dirname "$0")/../mem2mem_run.sh" newsroom hred_base "$@"
