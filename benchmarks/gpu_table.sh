#!/usr/bin/env bash
# The GPU table in one script: every family against fairseq's `transformer` (and the T5 cell against
# HF's T5) in fp16 and bf16, eager and compiled, with peak memory; Mem2Mem in its own benchmark.
#
#   bash benchmarks/gpu_table.sh [OUT]      # OUT defaults to benchmarks/results/gpu-YYYY-MM-DD
#   SMOKE=1 bash benchmarks/gpu_table.sh /tmp/smoke   # tiny shapes on CPU: checks the script only
#
# Each section runs under its own share of the time limit (BUDGET seconds for the sections run, 480
# by default: 8 minutes on one H100, fairseq's set-up on a bare machine not counted; SECTIONS="fp16_eager ..." runs some of them, e.g. the compiled one in a second call) and
# writes its own JSON, so a section that runs out of time or fails costs only its own rows: OUT/status.txt says
# which ones finished. OUT/table.md gathers them (benchmarks/gpu_summary.py), OUT/env.txt names the
# GPU, driver, torch and the code's commit. fairseq must be importable and the repository on
# PYTHONPATH (see benchmarks/README.md, "GPU").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-benchmarks/results/gpu-$(date -u +%F)}
BUDGET=${BUDGET:-480}
SMOKE=${SMOKE:-0}
ALL_SECTIONS="fp16_eager bf16_eager fp16_compiled mem2mem_fp16"
SECTIONS=${SECTIONS:-$ALL_SECTIONS}
for s in $SECTIONS; do
  case " $ALL_SECTIONS " in *" $s "*) ;; *) echo "gpu_table.sh: SECTIONS: unknown section '$s' (of: $ALL_SECTIONS)" >&2; exit 2;; esac
done
[ -n "${SECTIONS// /}" ] || { echo "gpu_table.sh: SECTIONS is empty (of: $ALL_SECTIONS)" >&2; exit 2; }
case "$BUDGET" in ''|*[!0-9]*) echo "gpu_table.sh: BUDGET must be a whole number of seconds, got '$BUDGET'" >&2; exit 2;; esac
case "$SMOKE" in 0|1) ;; *) echo "gpu_table.sh: SMOKE must be 0 or 1, got '$SMOKE'" >&2; exit 2;; esac
[ "$BUDGET" -ge 60 ] || { echo "gpu_table.sh: BUDGET=$BUDGET is too short for any section (>= 60)" >&2; exit 2; }
mkdir -p "$OUT" || exit 2
: > "$OUT/status.txt"

# The families: the default cell's presets (the tables before 2026-11-29 ran them as *_base), the T5
# cell (plain, gated, TPR), Mem2Mem below.
ARCHS="tp_transformer_default_cell_base tp_transformer_continuous_default_cell_base transformer_gated_base
       tp_transformer_gated_base etads_base transformer_ta_base t5_base t5_base_gated"
BF16_ARCHS="tp_transformer_default_cell_base t5_base"
COMPILED="t5_base"
if [ "$SMOKE" = 1 ]; then
  DEV=(--device cpu --threads 1)
  SHAPE=(--src-len 16 --tgt-len 8 --batch-size 2 --dict-size 1000 --steps 2 --rounds 1 --warmup-steps 2
         --gen-batches 1 --topics 8)
  ARCHS="tp_transformer_small t5_small"; BF16_ARCHS=$ARCHS; COMPILED="t5_small"; FP16=""; BF16=""
  M2M_SHAPE=(--device cpu --threads 1 --batch-size 1 --src-len 20 --sent-len 4 --tgt-len 6 --dict-size 500
             --steps 1 --warmup-steps 1)
else
  DEV=(--device cuda); FP16=--fp16; BF16=--bf16
  SHAPE=(--steps 12 --rounds 3 --warmup-steps 3 --gen-batches 1)  # ~15 s a model of d 512 on an H100
  M2M_SHAPE=(--device cuda --steps 10 --warmup-steps 3)
fi

{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(cat COMMIT 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)"  # COMMIT: an exported tree
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "gpu: none"
  python3 -c "import torch, fairseq; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'fairseq', fairseq.__version__)"
  python3 -c "import transformers; print('transformers', transformers.__version__)" 2>/dev/null || echo "transformers: absent (no hf_t5 rows)"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
PEERS=transformer
python3 -c "import transformers" 2>/dev/null && PEERS=transformer,hf_t5
# compiled: the T5 cell against HF's T5 compiled the same way (one compilation fewer than with the
# transformer too, which the eager sections measure)
COMPILED_PEERS=${PEERS#transformer,}

start=$(date +%s)
# section NAME COMMAND...: runs COMMAND (if NAME is in SECTIONS) under its SHARE of the budget (and never past
# the budget's end), its output in OUT/NAME.log, its result line in OUT/status.txt
declare -A SHARE=([fp16_eager]=36 [bf16_eager]=18 [fp16_compiled]=40 [mem2mem_fp16]=6)
TOTAL_SHARE=0
for s in $SECTIONS; do TOTAL_SHARE=$(( TOTAL_SHARE + ${SHARE[$s]} )); done
section() {
  local name=$1; shift
  case " $SECTIONS " in *" $name "*) ;; *) return;; esac
  local left=$(( BUDGET - ($(date +%s) - start) )) limit=$(( BUDGET * ${SHARE[$name]} / TOTAL_SHARE ))
  [ "$limit" -le "$left" ] || limit=$left
  if [ "$limit" -lt 20 ]; then echo "$name: not run (budget spent)" | tee -a "$OUT/status.txt"; return; fi
  echo "== $name (limit ${limit}s)"
  local t0=$(date +%s) rc=0
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1 || rc=$?
  local how="finished"
  [ "$rc" = 0 ] || how="FAILED (exit $rc)"
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && how="TIMED OUT after ${limit}s"
  echo "$name: $how in $(( $(date +%s) - t0 ))s" | tee -a "$OUT/status.txt"
  tail -n 40 "$OUT/$name.log"
}

B=benchmarks/bench_train.py
# fp16, eager: every arch, the peers, beam-4 generation, one profile of a few steps
section fp16_eager python3 $B "${DEV[@]}" "${SHAPE[@]}" $FP16 --archs $ARCHS --peers "$PEERS" \
  --generate --json "$OUT/fp16_eager.json"
# bf16, eager: the default cell and the T5 cell
section bf16_eager python3 $B "${DEV[@]}" "${SHAPE[@]}" $BF16 --archs $BF16_ARCHS --peers "$PEERS" \
  --generate --json "$OUT/bf16_eager.json"
# fp16, compiled (torch.compile, dynamic shapes): a subset, compile time reported apart from the steps
section fp16_compiled python3 $B "${DEV[@]}" "${SHAPE[@]}" $FP16 --compile --archs $COMPILED \
  --peers "$COMPILED_PEERS" --json "$OUT/fp16_compiled.json"
# Mem2Mem (hierarchical GRUs) against HRED, fp16
section mem2mem_fp16 python3 benchmarks/bench_mem2mem.py "${M2M_SHAPE[@]}" $FP16 \
  --json "$OUT/mem2mem_fp16.json"
python3 benchmarks/gpu_summary.py "$OUT" > "$OUT/table.md" || echo "gpu_summary.py failed" >&2
cat "$OUT/table.md"
echo "total $(( $(date +%s) - start ))s of BUDGET=${BUDGET}s; status:"; cat "$OUT/status.txt"
