#!/usr/bin/env bash
# hred_base on pubmed (App. A.2). Usage: bash recipes/pubmed/hred.sh PUBMED_DIR; see run.sh.
exec bash "$(dirname "$0")/run.sh" hred_base "$@"
