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
# gain 0.64 bits per abstract token, 100 distinct summaries). The last lines (quickstart_check.py)
# say whether its figures are those of a CPU model measured, give its ROUGE beside Lead-3 and the generic
# summary on the same 100 test papers (fairseq-sum-baselines, evaluation/baselines.py), and the
# verdict "specific to its document" (scoring/specificity.py: the one-sided 95% document-bootstrap
# lower bound of its ROUGE-2 reference specificity above max(0.5, half the mean of 20 random
# extracts'), test NLL below the no-training bag of pieces', and it reads its papers: source gain
# >= 0.3 bits, >= 90 distinct summaries) with its paired bootstrap against Lead-3 (ROUGE
# differences and p; "specific to its document but below Lead-3" first where that holds), and
# where it stands between the generic summary and Lead-3 if not specific.
# PINNED (1) pins the arithmetic (recipes/common.sh pin_arithmetic: MKL's
# reproducible branch, ATen's baseline kernels), meant to give the same bits on every x86-64 CPU
# (measured: 1 update and 2 decodings equal on an AMD EPYC and under QEMU's emulation of three
# others, cross_cpu.sh; but the 150 updates differ between the two physical CPU models run, an AMD
# EPYC and an Intel Xeon: results/quickstart-cpus/, section 5; the check names each's figures), at about
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
TRAIN_RUN=("${QUICKSTART_TRAIN[@]}" --max-update "$MAX_UPDATE" --validate-interval 4
  --save-interval 4 --no-epoch-checkpoints --log-interval 10)
GENERATE_RUN=("${QUICKSTART_GENERATE[@]}" --batch-size "$BATCH" --log-format simple
  --log-interval 1)

converted "$WORK/jsonl" ACLSum "" aclsum || python -m preprocess.aclsum_to_jsonl --out "$WORK/jsonl"
prepare "$WORK/jsonl" "$WORK" --vocab-size 8000 --max-src-tokens 512 --max-tgt-tokens 256 --workers 2 --seed 1 --num-threads 1

# The run's identity: every setting that changes the bits of the checkpoint (train.*) or of the
# decoding (decode.*), as compare.sh's run_spec: ARCH, MAX_UPDATE, THREADS, PINNED and the
# arithmetic variables it sets, torch's version, the data (a hash of WORK/bin's dictionaries, indices and
# prepare options) and every flag; BEAM, BATCH and the decoding flags. The checkpoint's name carries
# a hash of the train.* lines, the decoding's of all of them, and each records them
# (CKPT/run_spec.txt, OUT.spec.txt): a re-run with another THREADS, BATCH or flag trains or decodes
# anew, never reusing a finished run.
DATA_ID=$(python - "$WORK/bin" <<'EOF'
import hashlib, json, os, sys
folder = sys.argv[1]
with open(os.path.join(folder, "prepare_args.json"), encoding="utf-8") as f:
    options = json.load(f).get("options", {})
kept = {k: v for k, v in options.items() if k not in ("out", "jsonl_dir", "workers")}
ident = hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode())
for name in sorted(os.listdir(folder)):
    if name.endswith(".idx") or (name.startswith("dict.") and name.endswith(".txt")):
        with open(os.path.join(folder, name), "rb") as f:
            ident.update(name.encode() + b"\0" + hashlib.sha256(f.read()).digest())
print(ident.hexdigest()[:16])
EOF
)
TORCH_VERSION=$(python -c 'import torch; print(torch.__version__)')
TRAIN_SPEC=$(printf '%s\n' "train.ARCH=$ARCH" "train.MAX_UPDATE=$MAX_UPDATE" \
  "train.THREADS=$THREADS" "train.PINNED=$PINNED" "train.MKL_CBWR=${MKL_CBWR:-}" \
  "train.ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-}" "train.torch=$TORCH_VERSION" \
  "train.data=$DATA_ID" "train.flags=${TRAIN_RUN[*]}")
DECODE_SPEC=$(printf '%s\n' "$TRAIN_SPEC" "decode.BEAM=$BEAM" "decode.BATCH=$BATCH" \
  "decode.flags=${GENERATE_RUN[*]}")
spec_id() { sha256sum | cut -c1-10; }
RUN="$ARCH.u$MAX_UPDATE.t$THREADS.pinned$PINNED"
CKPT="$WORK/checkpoints/$RUN.$(spec_id <<< "$TRAIN_SPEC")"
OUT="$WORK/test.$RUN.beam$BEAM.batch$BATCH.$(spec_id <<< "$DECODE_SPEC").out"
mkdir -p "$CKPT"
printf '%s\n' "$TRAIN_SPEC" > "$CKPT/run_spec.txt"
printf '%s\n' "$DECODE_SPEC" > "$OUT.spec.txt"

train "$WORK/bin" "$CKPT" "${TRAIN_RUN[@]}"
generate "$WORK/bin" "$CKPT/checkpoint_last.pt" "$OUT" spm "${GENERATE_RUN[@]}"
score "$OUT" --specificity
python -m fairseq_sum_plugins.inspection.source_use "$WORK/bin" --path "$CKPT/checkpoint_last.pt" --cpu \
  --generate-output "$OUT" --json "$OUT.source_use.json"
# the baselines of the same test papers (Lead-3, the generic summary, the random extract that sets
# the specificity bar, the bag of pieces), once per prepared data
BASELINES="$WORK/baselines.test.json"
baselines_once "$WORK" "$BASELINES"
# the last lines: are the figures the expected ones, ROUGE beside the baselines, the verdict with
# the paired test against Lead-3
python "$(dirname "$0")/quickstart_check.py" "$OUT.rouge.json" "$OUT.source_use.json" "$PINNED" \
  "$DEFAULTS" "$BASELINES" "$OUT" "$WORK"
