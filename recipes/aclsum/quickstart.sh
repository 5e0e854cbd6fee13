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
# fairseq_sum_plugins/analysis/source_use.py) and whether its ROUGE-1 is within the stated tolerance
# of the expected figure. 150 updates on 100 papers: expect ROUGE far below the papers'.
# results/README.md has longer runs. Paper's ROUGE-1/2/L: no paper figure; hardware: minutes on a CPU.
# Data: the aclsum package (PyPI; HF sobamchan/aclsum), shipped with it. More in recipes/README.md, "Reproducing a paper".
source "$(dirname "$0")/../common.sh"
WORK=${1:-data/aclsum-quickstart}
ARCH=${ARCH:-tp_transformer_small}
MAX_UPDATE=${MAX_UPDATE:-150}
BEAM=${BEAM:-4}
BATCH=${BATCH:-10}
THREADS=${THREADS:-1}
# at least 1 each: fairseq reads --max-update 0 as "no limit", torch reads 0 threads as every core
for v in MAX_UPDATE BEAM BATCH THREADS; do require_int "$v" 1; done
export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
CKPT="$WORK/checkpoints/$ARCH.u$MAX_UPDATE"

converted "$WORK/jsonl" ACLSum || python -m preprocess.aclsum_to_jsonl --out "$WORK/jsonl"
prepare "$WORK/jsonl" "$WORK" --vocab-size 8000 --max-src-tokens 512 --max-tgt-tokens 256 --workers 2 --seed 1 --num-threads 1

train "$WORK/bin" "$CKPT" --arch "$ARCH" --pointer-generator True --cpu --seed 1 --num-workers 0 \
  --optimizer adam --adam-betas '(0.9, 0.98)' --lr 2e-3 --lr-scheduler inverse_sqrt --warmup-updates 50 \
  --label-smoothing 0.1 --dropout 0.1 --clip-norm 1.0 --max-tokens 4000 \
  --max-source-positions 520 --max-target-positions 260 --max-update "$MAX_UPDATE" \
  --validate-interval 4 --save-interval 4 --no-epoch-checkpoints --log-interval 10

OUT="$WORK/test.$ARCH.u$MAX_UPDATE.beam$BEAM.out"
generate "$WORK/bin" "$CKPT/checkpoint_last.pt" "$OUT" spm --cpu --gen-subset test --beam "$BEAM" \
  --batch-size "$BATCH" --min-len 60 --max-len-b 256 --lenpen 1.0 --no-repeat-ngram-size 3 \
  --log-format simple --log-interval 1
score "$OUT"
python -m fairseq_sum_plugins.analysis.source_use "$WORK/bin" --path "$CKPT/checkpoint_last.pt" --cpu \
  --generate-output "$OUT" --json "$OUT.source_use.json"
# expected on the machine the README names; other CPU models round floating point differently
python - "$OUT.rouge.json" "$OUT.source_use.json" <<'PY'
import json, sys
rouge, use = (json.load(open(p, encoding="utf-8")) for p in sys.argv[1:3])
EXPECTED_R1, TOLERANCE = 25.00, 1.0  # README: ROUGE-1 F1 of the default run, and the tolerance it states
r1 = 100 * rouge["rouge1"]
reads = use["gain"] >= 0.3 and use["distinct"] >= 0.9 * use["hypotheses"]
print(f"[quickstart] reads its papers: {'yes' if reads else 'NO'} (source gain {use['gain']:.3f} bits >= 0.3, "
      f"{use['distinct']} distinct summaries of {use['hypotheses']} >= 90%)")
print(f"[quickstart] ROUGE-1 {r1:.2f}: {'inside' if abs(r1 - EXPECTED_R1) <= TOLERANCE else 'OUTSIDE'} the expected "
      f"{EXPECTED_R1:.2f} +- {TOLERANCE} (default settings only)")
PY
