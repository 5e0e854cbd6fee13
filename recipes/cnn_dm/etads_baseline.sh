#!/usr/bin/env bash
# The ETADS paper's "Basic model" (Table 2: a 4-layer transformer without focus attention or
# saliency selection) on CNN/Daily Mail, same setup. Usage: bash recipes/cnn_dm/etads_baseline.sh CNNDM [URL_LISTS]; see etads.sh.
ARCH=etads_baseline exec bash "$(dirname "$0")/etads.sh" "$@"
