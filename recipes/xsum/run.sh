#!/usr/bin/env bash
# XSum with the TP-Transformer paper's setup (§3.2, App. B); the steps, flags and environment
# (NGPU, UPDATE_FREQ, MAX_UPDATE, FP16, VOCAB, ...) are those of recipes/tp_transformer_run.sh.
#
#   bash recipes/xsum/run.sh ARCH XSUM [SPLIT_FILE]
#     ARCH   t5_transformer_base | tp_transformer_base | tp_transformer_continuous_base
#     XSUM   HF `xsum` JSONL (a file, or a dir with train/validation/test .jsonl), or the raw BBC
#            extraction dir (`*.summary` files; then SPLIT_FILE = XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json)
#
# Environment: WORK (data/xsum), MAX_SRC (512), MAX_TGT (64) and those of tp_transformer_run.sh.
ARCH=${1:?usage: run.sh ARCH XSUM [SPLIT_FILE]}
XSUM=${2:?usage: run.sh ARCH XSUM [SPLIT_FILE]}
WORK=${WORK:-data/xsum} exec bash "$(dirname "$0")/../tp_transformer_run.sh" xsum "$ARCH" "$XSUM" "${3:-}"
