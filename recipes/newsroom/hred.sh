#!/usr/bin/env bash
# hred_base on newsroom (App. A.2). Usage: bash recipes/newsroom/hred.sh NEWSROOM_DIR; see run.sh.
exec bash "$(dirname "$0")/run.sh" hred_base "$@"
