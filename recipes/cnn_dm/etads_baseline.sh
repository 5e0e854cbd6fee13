#!/usr/bin/env bash
# The ETADS paper's "Basic model" (Table 2: a 4-layer transformer without focus attention or
# saliency selection) on CNN/Daily Mail, same setup. Usage: bash recipes/cnn_dm/etads_baseline.sh CNNDM [URL_LISTS]; see etads.sh.
# Paper's ROUGE-1/2/L: 39.45/17.20/36.49 (beam 10); paper's hardware: 4 Titan Xp, 200k steps.
# Data: https://cs.nyu.edu/~kcho/DMQA/ stories + https://github.com/abisee/cnn-dailymail url lists (HF: abisee/cnn_dailymail 3.0.0). More in recipes/README.md, "Reproducing a paper".
ARCH=etads_baseline exec bash "$(dirname "$0")/etads.sh" "$@"
