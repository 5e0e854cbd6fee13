#!/usr/bin/env bash
# mem2mem_base on newsroom (App. A.2). Usage: bash recipes/newsroom/mem2mem.sh NEWSROOM_DIR; see run.sh.
exec bash "$(dirname "$0")/run.sh" mem2mem_base "$@"
