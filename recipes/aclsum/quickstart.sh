#!/usr/bin/env bash
# Quickstart on the embedded ACLSum data (250 ACL papers: body -> abstract, its train/val/test splits):
# prepare -> train a small TP-Transformer on CPU for a few minutes -> fairseq-generate -> ROUGE.
#
#   bash recipes/aclsum/quickstart.sh [WORK_DIR]      (default: data/aclsum-quickstart)
#
# ARCH (tp_transformer_small), TRAIN_MINUTES (5) and BEAM (4) can be set in the environment.
# A few CPU minutes on 100 papers only shows the pipeline working: expect ROUGE far below the papers'.
# Paper's ROUGE-1/2/L: no paper figure; paper's hardware: a few minutes on a CPU.
# Data: the aclsum package (PyPI; HF sobamchan/aclsum), shipped with it. More in recipes/README.md, "Reproducing a paper".
source "$(dirname "$0")/../common.sh"
WORK=${1:-data/aclsum-quickstart}
ARCH=${ARCH:-tp_transformer_small}
TRAIN_MINUTES=${TRAIN_MINUTES:-5}
if ! [[ $TRAIN_MINUTES =~ ^[0-9]+([.][0-9]+)?$ ]]; then
  echo "quickstart.sh: TRAIN_MINUTES must be a number of minutes, got '$TRAIN_MINUTES'" >&2; exit 2
fi
BEAM=${BEAM:-4}

converted "$WORK/jsonl" ACLSum || python -m preprocess.aclsum_to_jsonl --out "$WORK/jsonl"
prepare "$WORK/jsonl" "$WORK" --vocab-size 8000 --max-src-tokens 512 --max-tgt-tokens 256 --workers 2

train "$WORK/bin" "$WORK/checkpoints/$ARCH" --arch "$ARCH" \
  --optimizer adam --adam-betas '(0.9, 0.98)' --lr 2e-3 --lr-scheduler inverse_sqrt --warmup-updates 50 \
  --label-smoothing 0.1 --dropout 0.1 --clip-norm 1.0 --max-tokens 4000 \
  --max-source-positions 520 --max-target-positions 260 \
  --max-update 100000 --stop-time-hours "$(python -c 'import sys; print(float(sys.argv[1]) / 60)' "$TRAIN_MINUTES")" \
  --validate-interval 4 --save-interval 4 --no-epoch-checkpoints --log-interval 10 --seed 1

generate "$WORK/bin" "$WORK/checkpoints/$ARCH/checkpoint_best.pt" "$WORK/test.$ARCH.beam$BEAM.out" \
  --gen-subset test --beam "$BEAM" --batch-size 25 --min-len 60 --max-len-b 256 --lenpen 1.0 --no-repeat-ngram-size 3
score "$WORK/test.$ARCH.beam$BEAM.out"
