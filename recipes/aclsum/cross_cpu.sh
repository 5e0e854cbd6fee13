#!/usr/bin/env bash
# Does the quickstart compute the same bits on other CPU models? Trains the quickstart's model for
# UPDATES (1) updates and decodes the first DOCS (2) test papers, on this CPU and under QEMU's user-mode
# emulation of other CPU models (qemu-x86_64 -cpu MODEL: another vendor, instruction set and cache
# description in CPUID, so MKL and ATen pick the code paths that CPU would get), once with the quickstart's
# pinned arithmetic (PINNED=1, recipes/common.sh pin_arithmetic) and once as torch picks for the CPU
# (PINNED=0), then compares fingerprints: sha256 of every parameter, of the optimizer state (after one
# Adam update its moments hold every bit of the gradient) and of the decodings
# (ledger/fingerprint.py).
#
#   bash recipes/aclsum/cross_cpu.sh [WORK_DIR] [OUT_DIR]
#     WORK_DIR: the quickstart's (default data/aclsum-quickstart; its prepared bin/ is used)
#     OUT_DIR: default WORK_DIR/cross_cpu; OUT_DIR/cross_cpu.md and .json hold the table
#   CPU_MODELS ("Haswell-v4 EPYC-Rome-v1 SandyBridge-v1": an Intel and an AMD CPU with AVX2 and FMA, an
#   Intel CPU without either, none with AVX-512, which QEMU does not emulate; see qemu-x86_64 -cpu help),
#   MODES ("1 0": PINNED values), UPDATES (1), DOCS (2), ARCH, BEAM as the quickstart.
# Needs qemu-user (Debian: apt-get install qemu-user). Emulation is about 200x slower than this CPU:
# 7-15 minutes per emulated model and mode at the defaults. Each step goes through common.sh step_gate:
# OUT_DIR/data (a spec of the data by content, ARCH, BEAM, UPDATES, DOCS, torch's version) and each
# run (that spec, the mode, the CPU model, the quickstart's flags) are skipped when made under this
# spec; under another, refused naming the difference (FORCE=1 makes OUT_DIR's data and runs again).
source "$(dirname "$0")/../common.sh"
WORK=${1:-data/aclsum-quickstart}
OUT=${2:-$WORK/cross_cpu}
ARCH=${ARCH:-tp_transformer_small}
BEAM=${BEAM:-4}
UPDATES=${UPDATES:-1}
DOCS=${DOCS:-2}
read -r -a CPUS <<< "${CPU_MODELS-Haswell-v4 EPYC-Rome-v1 SandyBridge-v1}"
read -r -a PIN_MODES <<< "${MODES-1 0}"
for v in UPDATES DOCS BEAM; do require_int "$v" 1; done
for m in "${PIN_MODES[@]}"; do
  [[ $m == [01] ]] || { echo "${0##*/}: MODES must list 1 (pinned) and/or 0 (as torch picks), got '$m'" >&2; exit 2; }
done
[ "${#PIN_MODES[@]}" -gt 0 ] || { echo "${0##*/}: MODES is empty" >&2; exit 2; }
[ -f "$WORK/bin/prepare_args.json" ] || {
  echo "${0##*/}: $WORK/bin is not prepared: run bash recipes/aclsum/quickstart.sh $WORK first" >&2; exit 2; }
if [ "${#CPUS[@]}" -gt 0 ]; then
  command -v qemu-x86_64 >/dev/null || { echo "${0##*/}: needs qemu-x86_64 (Debian: apt-get install qemu-user)" >&2; exit 2; }
  known=$(qemu-x86_64 -cpu help || true)  # it lists the models and exits 1
  for cpu in "${CPUS[@]}"; do
    grep -qE "^x86 +$cpu( |$)" <<< "$known" || { echo "${0##*/}: unknown CPU model '$cpu' (qemu-x86_64 -cpu help)" >&2; exit 2; }
  done
fi
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
source "$(dirname "$0")/quickstart_flags.sh"
# the interpreter itself, not a shim: QEMU's user mode runs one binary and does not follow exec
PY=$(python -c 'import sys; print(sys.executable)')
DATA=$(cd "$WORK/bin" && pwd)
# an OUT_DIR holds the runs of one set of settings: a re-run with others would compare stale runs.
# The settings are the spec of OUT_DIR/data (the data with a test split of its first DOCS papers,
# fairseq-generate decodes whole splits), which each run reads; FORCE=1 under other settings makes
# the data again and removes every run made from the old
SETTINGS=(--field "ARCH=$ARCH" --field "BEAM=$BEAM" --field "UPDATES=$UPDATES" --field "DOCS=$DOCS"
  --field "torch=$(python -c 'import torch; print(torch.__version__)')")
mkdir -p "$OUT"
if step_gate "cross-cpu data" "$OUT/data/" "$([ -f "$OUT/data/.done" ] && echo 1 || echo 0)" \
  --input "data=$DATA" "${SETTINGS[@]}"; then
  [ "$STEP_ACTION" != force ] || rm -rf "$OUT"/pinned[01]
  python -c 'import sys; from ledger.fingerprint import head_data; head_data(sys.argv[1], sys.argv[2], int(sys.argv[3]))' \
    "$DATA" "$OUT/data" "$DOCS"
  touch "$OUT/data/.done"
else
  log "cross-cpu data: $OUT/data exists, skipped"
fi

run_one() {  # run_one PINNED CPU (CPU "host": this machine, natively)
  local pinned=$1 cpu=$2 dir="$OUT/pinned$1/$2" prefix=() complete
  [ "$cpu" = host ] || prefix=(qemu-x86_64 -cpu "$cpu")
  complete=$([ -f "$dir/fingerprint.json" ] && echo 1 || echo 0)
  [ "$complete" = 1 ] || rm -rf "$dir"  # an unfinished run: begun again
  if ! step_gate "cross-cpu run" "$dir/" "$complete" --input "data=$OUT/data" "${SETTINGS[@]}" \
    --field "PINNED=$pinned" --field "CPU=$cpu" -- "${QUICKSTART_TRAIN[@]}" "${QUICKSTART_GENERATE[@]}"; then
    log "$dir: done, skipped"; return
  fi
  log "PINNED=$pinned on $cpu: train $UPDATES updates, decode $DOCS papers -> $dir"
  (
    unset MKL_CBWR ATEN_CPU_CAPABILITY
    [ "$pinned" = 1 ] && pin_arithmetic
    "${prefix[@]}" "$PY" -m fairseq_cli.train "$OUT/data" --user-dir "$USER_DIR" --task summarization \
      --criterion summarization_loss "${QUICKSTART_TRAIN[@]}" --max-update "$UPDATES" --save-dir "$dir" \
      --no-epoch-checkpoints --disable-validation --log-format simple --log-interval 1 > "$dir/train.log" 2>&1
    "${prefix[@]}" "$PY" -m fairseq_cli.generate "$OUT/data" --user-dir "$USER_DIR" --task summarization \
      --path "$dir/checkpoint_last.pt" --tokenizer sum_moses --bpe sentencepiece \
      --sentencepiece-model "$DATA/spm.model" "${QUICKSTART_GENERATE[@]}" --batch-size "$DOCS" \
      > "$dir/generate.out" 2> "$dir/generate.log"
    # the code paths this CPU gets: ATen's kernels and the header MKL prints for its first call
    MKL_VERBOSE=1 "${prefix[@]}" "$PY" -c 'import torch; print("ATen", torch.backends.cpu.get_cpu_capability()); torch.ones(2, 2) @ torch.ones(2, 2)' \
      > "$dir/code_paths.txt" 2>&1
  ) || { echo "${0##*/}: the run in $dir failed; its logs are there" >&2; exit 1; }
  python -m ledger.fingerprint --path "$dir/checkpoint_last.pt" \
    --generate-output "$dir/generate.out" --json "$dir/fingerprint.json" > /dev/null
}

for pinned in "${PIN_MODES[@]}"; do
  for cpu in host "${CPUS[@]}"; do run_one "$pinned" "$cpu"; done
done
python -m ledger.fingerprint --compare "$OUT" --json "$OUT/cross_cpu.json" | tee "$OUT/cross_cpu.md"
