#!/usr/bin/env bash
# Wikihow (Koupaee & Wang, 2018) with the TP-Transformer paper's setup (§3.2, App. B); the steps,
# flags and environment are those of recipes/tp_transformer_run.sh (WORK default data/wikihow-tpt).
#
#   bash recipes/wikihow/run.sh ARCH WIKIHOW_CSV [SPLIT_LISTS_DIR]
#     ARCH             t5_transformer_base | tp_transformer_base | tp_transformer_continuous_base (or *_small)
#     WIKIHOW_CSV      wikihowAll.csv (headline, title, text)
#     SPLIT_LISTS_DIR  the official title lists all_train.txt / all_val.txt / all_test.txt (without it:
#                      a deterministic split by a hash of the title, see preprocess/wikihow_to_jsonl.py)
ARCH=${1:?usage: run.sh ARCH WIKIHOW_CSV [SPLIT_LISTS_DIR]}
CSV=${2:?usage: run.sh ARCH WIKIHOW_CSV [SPLIT_LISTS_DIR]}
exec bash "$(dirname "$0")/../tp_transformer_run.sh" wikihow "$ARCH" "$CSV" "${3:-}"
