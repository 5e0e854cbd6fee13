#!/usr/bin/env bash
# Quickstart on the embedded ACLSum data (250 ACL papers: body -> abstract, its train/val/test splits):
# prepare -> train a small TP-Transformer with a copy mechanism on CPU for a fixed number of updates ->
# fairseq-generate -> ROUGE -> does the model read its papers?
#
#   bash recipes/aclsum/quickstart.sh [WORK_DIR]      (default: data/aclsum-quickstart)
#
# MAX_UPDATE (150) updates with seed 1 on one CPU thread (THREADS, 1: one thread neither competes
# with itself on a busy machine nor changes the order of floating-point sums), the last checkpoint
# decoded. ARCH (tp_transformer_small) and BEAM (4) can be set too; every number must be an integer >= 1.
# fairseq-generate logs every batch of BATCH (10) papers, so decoding shows its progress.
# The model is tp_transformer_small with --pointer-generator True (See et al.'s copy mechanism over the
# last decoder layer's cross-attention): without it, a transformer trained this briefly on 100 papers
# learns the abstracts' language but not to read its paper, and writes one abstract for every test
# paper (source gain 0.000, 1 distinct summary of 100); with it, it copies from its own paper (source
# gain 0.64 bits per abstract token, 100 distinct summaries). The last lines say whether this run
# reads its papers (source gain >= 0.3 bits, >= 90 distinct summaries;
# fairseq_sum_plugins/analysis/source_use.py) and whether its figures are the expected ones
# (quickstart_check.py). PINNED (1) pins the arithmetic (recipes/common.sh pin_arithmetic: MKL's
# reproducible branch, ATen's baseline kernels), so that the figures are the same bits on any x86-64 CPU
# (checked under QEMU's emulation of other CPU models: cross_cpu.sh, results/quickstart-cpus/), at about
# twice the CPU time per update; PINNED=0 lets torch pick its fastest code paths for the CPU, and
# rounding then moves ROUGE-1 by up to 2 points (the tolerance printed is the spread measured there).
# 150 updates on 100 papers: expect ROUGE far below the papers'.
# results/README.md has longer runs. Paper's ROUGE-1/2/L: no paper figure; hardware: minutes on a CPU.
# Data: the aclsum package (PyPI; HF sobamchan/aclsum), shipped with it. More in recipes/README.md, "Reproducing a paper".
source "$(dirname "$0")/../common.sh"
WORK=${1:-data/aclsum-quickstart}
ARCH=${ARCH:-tp_transformer_small}
MAX_UPDATE=${MAX_UPDATE:-150}
BEAM=${BEAM:-4}
BATCH=${BATCH:-10}
THREADS=${THREADS:-1}
PINNED=${PINNED:-1}
# at least 1 each: fairseq reads --max-update 0 as "no limit", torch reads 0 threads as every core
for v in MAX_UPDATE BEAM BATCH THREADS; do require_int "$v" 1; done
require_int PINNED 0 1
DEFAULTS=0
[ "$ARCH/$MAX_UPDATE/$BEAM/$BATCH/$THREADS" != tp_transformer_small/150/4/10/1 ] || DEFAULTS=1
export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
if [ "$PINNED" = 1 ]; then pin_arithmetic; else unset MKL_CBWR ATEN_CPU_CAPABILITY; fi
source "$(dirname "$0")/quickstart_flags.sh"
# the arithmetic mode names the run: a re-run with the other PINNED trains anew
CKPT="$WORK/checkpoints/$ARCH.u$MAX_UPDATE.pinned$PINNED"

converted "$WORK/jsonl" ACLSum || python -m preprocess.aclsum_to_jsonl --out "$WORK/jsonl"
prepare "$WORK/jsonl" "$WORK" --vocab-size 8000 --max-src-tokens 512 --max-tgt-tokens 256 --workers 2 --seed 1 --num-threads 1

train "$WORK/bin" "$CKPT" "${QUICKSTART_TRAIN[@]}" --max-update "$MAX_UPDATE" \
  --validate-interval 4 --save-interval 4 --no-epoch-checkpoints --log-interval 10

OUT="$WORK/test.$ARCH.u$MAX_UPDATE.pinned$PINNED.beam$BEAM.out"
generate "$WORK/bin" "$CKPT/checkpoint_last.pt" "$OUT" spm "${QUICKSTART_GENERATE[@]}" \
  --batch-size "$BATCH" --log-format simple --log-interval 1
score "$OUT"
python -m fairseq_sum_plugins.analysis.source_use "$WORK/bin" --path "$CKPT/checkpoint_last.pt" --cpu \
  --generate-output "$OUT" --json "$OUT.source_use.json"
# the last lines: does it read its papers, and are the figures the expected ones (quickstart_check.py)
python "$(dirname "$0")/quickstart_check.py" "$OUT.rouge.json" "$OUT.source_use.json" "$PINNED" "$DEFAULTS"
