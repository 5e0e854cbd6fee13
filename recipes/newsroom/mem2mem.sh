#!/usr/bin/env bash
# mem2mem_base on newsroom (Mem2Mem App. A.2). Usage: bash recipes/newsroom/mem2mem.sh NEWSROOM_DIR; see recipes/mem2mem_run.sh.
exec bash "$(dirname "$0")/../mem2mem_run.sh" newsroom mem2mem_base "$@"
