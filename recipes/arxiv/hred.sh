#!/usr/bin/env bash
# hred_base on arxiv (App. A.2). Usage: bash recipes/arxiv/hred.sh ARXIV_DIR; see run.sh.
exec bash "$(dirname "$0")/run.sh" hred_base "$@"
