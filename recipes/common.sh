# Shared steps of the recipes: prepare -> train -> generate -> score. Each step is skipped when its
# output exists and was made under the same spec (step_gate below), so a recipe can be re-run to
# resume; a re-run under another spec is refused, or redone with FORCE=1. Source this file; set the
# variables it reads.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
USER_DIR="$REPO/fairseq_sum_plugins"
# `python -m preprocess.xxx` from any folder: the checkout's preprocess/ (installed packages name
# it fairseq_sum_plugins_preprocess, setup.py)
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"

log() { echo "[$(date +%H:%M:%S)] $*"; }

# step_gate STEP TARGET COMPLETE [--partial 0|1] [--resumes] [--input NAME=PATH]... [--field
# KEY=VALUE]... [--root DIR] [-- FLAG...]: the one "exists, skipped" decision of every step
# (fairseq_sum_plugins/cli/run_spec.py). TARGET is the step's output (FOLDER/ or FILE), COMPLETE 1
# when the step's own test finds it finished. The spec (SMOKE, PRESET, the identity of each input by
# its content, the fields, the flags) is recorded beside it (FOLDER/spec.json, FILE.spec.json)
# before the step runs. Returns 1 (skip) when TARGET is complete and was made under this spec, else
# 0 (run; STEP_ACTION=force when FORCE=1 redoes an output made under another spec). An output to
# reuse (complete, or with --resumes a partial one) made under another spec, or without a record,
# stops the recipe (exit 2) with a message naming each field that differs, unless FORCE=1.
step_gate() {
  local step=$1 target=$2 complete=$3
  shift 3
  STEP_ACTION=$(python -m fairseq_sum_plugins.cli.run_spec gate "$step" "$target" --complete "$complete" "$@") || exit 2
  if [ "$STEP_ACTION" = force ]; then log "$step: FORCE=1: $target made again under this run's spec"; fi
  [ "$STEP_ACTION" != skip ]
}

# gated STEP TARGET DONE [--stdout FILE] [step_gate's --input/--field/--root...] -- COMMAND...: a
# step that is one command, through step_gate: COMMAND runs (its stdout into FILE) unless DONE (a
# file) is non-empty and TARGET was made under this spec. The spec's flags are COMMAND's words (a
# path as its name, or under --root as {root}/...), so another option is another spec; give each
# input whose content matters (checkpoint, data, labels, decoding) as --input.
gated() {
  local step=$1 target=$2 done=$3 complete=0 stdout="" opts=()
  shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    if [ "$1" = --stdout ]; then stdout=$2; shift 2; else opts+=("$1"); shift; fi
  done
  [ $# -gt 0 ] || { echo "gated $step: no -- COMMAND" >&2; exit 2; }
  shift
  [ -s "$done" ] && complete=1
  if ! step_gate "$step" "$target" "$complete" "${opts[@]+"${opts[@]}"}" -- "$@"; then
    log "$step: $target exists, skipped"; return 0
  fi
  log "$step -> $target"
  if [ -n "$stdout" ]; then "$@" > "$stdout"; else "$@"; fi
}

# baselines_once WORK JSON: fairseq-sum-baselines of WORK's prepared test set into JSON (its printed
# table in JSON's name with .txt for .json, its extracts in the folder of JSON's name without .json:
# OUT/baselines.json -> OUT/baselines/lead3.txt, ..., the files results_index rescores), once per
# prepared data: skipped while JSON and the extracts are there and were made from the same data
# (step_gate); the JSON written through a temporary file, so a killed run leaves none and is redone
baselines_once() {
  local work=$1 json=$2 complete=0
  [ -f "$json" ] && [ -f "${json%.json}/lead3.txt" ] && complete=1
  if step_gate baselines "$json" "$complete" --input "data=$work/bin"; then
    log "baselines: $work -> $json"
    python -m fairseq_sum_plugins.evaluation.baselines.systems --data "$work" --json "$json.tmp" \
      --outputs "${json%.json}" > "${json%.json}.txt"
    mv "$json.tmp" "$json"
  else
    log "baselines: $json exists, skipped"
  fi
}

# require_int NAME MIN [MAX]: stops (exit 2) with a message naming NAME unless $NAME is a decimal
# integer in MIN..MAX; rewrites it without sign or leading zeros (bash arithmetic would read "010" as
# octal, and evaluates any other text as an expression: a name, or a command in an array index)
require_int() {
  local name=$1 min=$2 max=${3:-} value=${!1-} range=">= $2"
  [ -z "$max" ] || range="in $min..$max"
  if ! [[ $value =~ ^[+-]?[0-9]{1,18}$ ]]; then
    echo "${0##*/}: $name must be an integer $range, got '$value'" >&2; exit 2
  fi
  value=${value#+}
  if [[ $value == -* ]]; then value=$(( -10#${value#-} )); else value=$(( 10#$value )); fi
  if (( value < min )) || { [ -n "$max" ] && (( value > max )); }; then
    echo "${0##*/}: $name must be an integer $range, got $value" >&2; exit 2
  fi
  printf -v "$name" %d "$value"
}

# require_name VAR: stops (exit 2) naming VAR unless $VAR can name a file: letters, digits and
# _ . + -, not starting with . or - (a run's NAME: its checkpoint folder and outputs)
require_name() {
  if ! [[ ${!1-} =~ ^[A-Za-z0-9_][A-Za-z0-9_.+-]*$ ]]; then
    echo "${0##*/}: $1 must be letters, digits and _ . + - (not starting with . or -), got '${!1-}'" >&2; exit 2
  fi
}

# require_number NAME [positive]: stops (exit 2) naming NAME unless $NAME is a decimal number (2e-3,
# 1.0, -0.5), above 0 when "positive" is given
require_number() {
  local value=${!1-}
  if ! [[ $value =~ ^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$ ]] \
    || { [ "${2:-}" = positive ] && ! awk -v x="$value" 'BEGIN { exit !(x + 0 > 0) }'; }; then
    echo "${0##*/}: $1 must be a ${2:+positive }number, got '$value'" >&2; exit 2
  fi
}

# fp16_flag: "--fp16" when FP16 (default 1) is set and torch sees a GPU, else nothing (CPU runs fp32;
# --bf16 is not offered: in this fairseq it implies a TPU)
fp16_flag() {
  if [ "${FP16:-1}" = 1 ]; then python -c "import torch; print('--fp16' if torch.cuda.is_available() else '')"; fi
}

# visible_gpus: the GPUs this node shows to torch (CUDA_VISIBLE_DEVICES applies); VISIBLE_GPUS
# overrides the count (dry runs, tests)
visible_gpus() {
  if [ -n "${VISIBLE_GPUS:-}" ]; then require_int VISIBLE_GPUS 0; echo "$VISIBLE_GPUS"; return; fi
  python -c "import torch; print(torch.cuda.device_count())"
}

# gpu_setup PAPER_WORKERS [PAPER_ACCUM]: the paper's global batch on NGPU GPUs per node (1) x NNODES
# nodes (1). Stops when NGPU disagrees with the GPUs the node shows (fairseq would otherwise train on
# every visible GPU: a larger batch than the paper's). Sets WORLD (NGPU x NNODES; 1 on a CPU),
# UPDATE_FREQ (unless set: PAPER_WORKERS x PAPER_ACCUM / WORLD, rounded up, so that one update sums
# the paper's batches; a warning on stderr when WORLD does not divide it) and DIST_FLAGS (fairseq-train flags:
# --distributed-world-size, and for several nodes the rendezvous: under Slurm --distributed-port
# DIST_PORT (fairseq reads the SLURM_* variables), else MASTER_ADDR, MASTER_PORT and NODE_RANK). Every
# one of these numbers must be an integer in its range (require_int), or the recipe stops.
gpu_setup() {
  local batches=$(( $1 * ${2:-1} )) visible
  NGPU=${NGPU:-1}
  NNODES=${NNODES:-1}
  require_int NGPU 1
  require_int NNODES 1
  if [ -n "${NODE_RANK:-}" ]; then require_int NODE_RANK 0 $(( NNODES - 1 )); fi
  if [ -n "${UPDATE_FREQ:-}" ]; then require_int UPDATE_FREQ 1; fi
  if [ -n "${MASTER_PORT:-}" ]; then require_int MASTER_PORT 1 65535; fi
  if [ -n "${DIST_PORT:-}" ]; then require_int DIST_PORT 1 65535; fi
  visible=$(visible_gpus)
  if [ "$visible" -eq 0 ]; then
    if [ "$NGPU" -ne 1 ] || [ "$NNODES" -ne 1 ]; then
      echo "NGPU=$NGPU NNODES=$NNODES but no GPU is visible: set NGPU=1 NNODES=1 for a CPU run" >&2; exit 2
    fi
    WORLD=1
    DIST_FLAGS=()
  else
    if [ "$visible" -ne "$NGPU" ]; then
      echo "NGPU=$NGPU but this node shows $visible GPU(s): set NGPU=$visible, or CUDA_VISIBLE_DEVICES to $NGPU GPU(s)" >&2
      exit 2
    fi
    WORLD=$(( NGPU * NNODES ))
    DIST_FLAGS=(--distributed-world-size "$WORLD")
    if [ "$NNODES" -gt 1 ] && [ -n "${SLURM_JOB_ID:-}" ]; then
      DIST_FLAGS+=(--distributed-port "${DIST_PORT:-12355}")
    elif [ "$NNODES" -gt 1 ]; then
      : "${MASTER_ADDR:?NNODES>1 outside Slurm needs MASTER_ADDR (node 0), MASTER_PORT and NODE_RANK}"
      : "${NODE_RANK:?NNODES>1 outside Slurm needs NODE_RANK (0..NNODES-1)}"
      DIST_FLAGS+=(--distributed-init-method "tcp://$MASTER_ADDR:${MASTER_PORT:-12355}" --distributed-rank $(( NODE_RANK * NGPU )))
    fi
  fi
  if [ -z "${UPDATE_FREQ:-}" ]; then
    UPDATE_FREQ=$(( (batches + WORLD - 1) / WORLD ))
    [ $(( UPDATE_FREQ * WORLD )) -eq "$batches" ] || log "warning: $WORLD workers x --update-freq $UPDATE_FREQ = $(( UPDATE_FREQ * WORLD )) batches per update, the paper's $batches" >&2
  fi
  log "($WORLD worker(s) x --update-freq $UPDATE_FREQ; the paper: $batches batches per update)" >&2
}

# main_node: true on the node that decodes and scores (node 0; every node trains, the others stop
# after train)
main_node() { [ "${NODE_RANK:-${SLURM_NODEID:-0}}" -eq 0 ]; }

# pin_arithmetic: exports the settings meant to make torch compute the same bits on every x86-64 CPU
# model (Intel or AMD, AVX-512 or not), given the same torch, data, seed and one thread (measured: 1
# update and 2 decodings equal on one physical and three emulated CPU models; the quickstart's 150
# updates differ between an AMD EPYC and an Intel Xeon: results/quickstart-cpus/). What differs
# between CPU models is the code path a library picks for the CPU it finds: MKL's GEMM kernels and
# cache blocking, ATen's AVX-512 / AVX2 / scalar kernels. MKL_CBWR=COMPATIBLE,STRICT is MKL's
# reproducible branch for Intel and non-Intel CPUs alike (SSE2 kernels without the approximate
# rcpps/rsqrtps, fixed blocking; STRICT: whatever the alignment); ATEN_CPU_CAPABILITY=default makes
# ATen run its baseline x86-64 kernels everywhere. Costs about 2x per training update on this
# project's CPU. Checked under QEMU's emulation of other CPU models: recipes/aclsum/cross_cpu.sh.
pin_arithmetic() {
  export MKL_CBWR=COMPATIBLE,STRICT ATEN_CPU_CAPABILITY=default
}

# converted JSONL_DIR [RAW [AUX [CONVERTER FLAG...]]]: true (and logs the skip) when a converter
# already wrote JSONL_DIR from the same RAW and AUX (by content) with the same flags (step_gate);
# the converters write test.jsonl last, each split under a temporary name, so it is never partial
converted() {
  local dir=$1 raw=${2:-} aux=${3:-} complete=0 inputs=()
  shift $(( $# < 3 ? $# : 3 ))
  [ -f "$dir/test.jsonl" ] && complete=1
  [ -z "$raw" ] || inputs+=(--input "RAW=$raw")
  [ -z "$aux" ] || inputs+=(--input "AUX=$aux")
  if ! step_gate convert "$dir/" "$complete" "${inputs[@]+"${inputs[@]}"}" --root "$(dirname "$dir")" -- "$@"; then
    log "convert: $dir exists, skipped"; return 0
  fi
  log "convert: ${raw:+$raw }-> $dir"
  return 1
}

# convert_dataset DATASET RAW AUX OUT: the dataset's converter (preprocess/*_to_jsonl.py, with the
# corpus statistics beside the papers'), skipped when OUT is complete. DATASET: xsum (RAW: HF JSONL,
# or the raw BBC directory with AUX = the split file), cnn_dm (RAW: HF JSONL file/directory, or the
# stories directories with AUX = the url lists), wikihow (RAW: wikihowAll.csv, AUX: split lists),
# arxiv | pubmed (RAW: Cohan et al.'s directory), nyt (RAW: the licensed corpus extracted to JSONL,
# filtered to summaries of at least 50 words as Topic Assistant App. A).
convert_dataset() {
  local dataset=$1 raw=$2 aux=$3 out=$4
  converted "$out" "$raw" "$aux" "$dataset" && return
  case $dataset in
    xsum)
      if [ -n "$aux" ]; then python -m preprocess.xsum_to_jsonl --raw-dir "$raw" --split-file "$aux" --out "$out" --stats
      else python -m preprocess.xsum_to_jsonl --jsonl "$raw" --out "$out" --stats; fi ;;
    cnn_dm)
      if [ -f "$raw" ] || ls "$raw"/*.jsonl >/dev/null 2>&1; then
        python -m preprocess.cnndm_to_jsonl --jsonl "$raw" --out "$out" --stats
      else
        # shellcheck disable=SC2086
        python -m preprocess.cnndm_to_jsonl --stories-dir $raw ${aux:+--url-lists "$aux"} --out "$out" --stats
      fi ;;
    wikihow)
      python -m preprocess.wikihow_to_jsonl --csv "$raw" ${aux:+--split-lists "$aux"} --out "$out" --stats ;;
    nyt)
      python -m preprocess.nyt_to_jsonl --jsonl "$raw" --out "$out" --min-summary-words 50 --stats ;;
    arxiv|pubmed)
      python -m preprocess.arxiv_pubmed_to_jsonl --in "$raw" --dataset "$dataset" --out "$out" --stats ;;
    *) echo "convert_dataset: unknown dataset $dataset" >&2; return 2 ;;
  esac
}

# check_bart BART_DIR: fairseq's BART release with the GPT-2 BPE files (encoder.json, vocab.bpe from
# https://dl.fbaipublicfiles.com/fairseq/gpt2_bpe/)
check_bart() {
  local f
  for f in model.pt dict.txt encoder.json vocab.bpe; do
    [ -f "$1/$f" ] || { echo "missing $1/$f" >&2; exit 1; }
  done
}

# bart_binarize JSONL_DIR WORK BART_DIR SRC TGT [preprocess.gpt2_bpe options...]: GPT-2 BPE of the
# JSONL (WORK/bpe) -> fairseq binaries with BART's dictionary (WORK/bin). gpt2_bpe writes the test
# target last, each split under a temporary name; fairseq-preprocess writes the test target index last.
bart_binarize() {
  local jsonl=$1 work=$2 bart=$3 src=$4 tgt=$5 complete=0; shift 5
  [ -f "$work/bpe/test.$tgt" ] && complete=1
  if ! step_gate "gpt2 bpe" "$work/bpe/" "$complete" --input "jsonl=$jsonl" --input "encoder=$bart/encoder.json" \
    --input "vocab=$bart/vocab.bpe" --root "$work" -- --langs "$src,$tgt" "$@"; then
    log "gpt2 bpe: $work/bpe exists, skipped"
  else
    log "gpt2 bpe: $jsonl -> $work/bpe"
    python -m preprocess.gpt2_bpe --jsonl-dir "$jsonl" --out "$work/bpe" --langs "$src,$tgt" \
      --encoder-json "$bart/encoder.json" --vocab-bpe "$bart/vocab.bpe" --workers "$(nproc)" "$@"
  fi
  complete=0
  [ -f "$work/bin/test.$src-$tgt.$tgt.idx" ] && complete=1
  if ! step_gate binarize "$work/bin/" "$complete" --input "bpe=$work/bpe" --input "dict=$bart/dict.txt" \
    --root "$work" -- --source-lang "$src" --target-lang "$tgt"; then
    log "binarize: $work/bin exists, skipped"
  else
    log "binarize: $work/bpe -> $work/bin (BART's dictionary)"
    [ ! -d "$work/bin" ] || find "$work/bin" -mindepth 1 ! -name spec.json -delete  # an older binarization, not its record
    fairseq-preprocess --source-lang "$src" --target-lang "$tgt" --trainpref "$work/bpe/train" \
      --validpref "$work/bpe/valid" --testpref "$work/bpe/test" --destdir "$work/bin" \
      --srcdict "$bart/dict.txt" --tgtdict "$bart/dict.txt" --workers "$(nproc)"
  fi
}

# prepare JSONL_DIR OUT [fairseq-sum-prepare options...]
prepare() {
  local jsonl=$1 out=$2 complete=0 force=(); shift 2
  [ -f "$out/bin/prepare_args.json" ] && complete=1
  if ! step_gate prepare "$out/bin/" "$complete" --input "jsonl=$jsonl" --root "$out" -- "$@"; then
    log "prepare: $out/bin exists, skipped"; return
  fi
  [ "$STEP_ACTION" != force ] || force=(--force)
  log "prepare: $jsonl -> $out"
  fairseq-sum-prepare --jsonl-dir "$jsonl" --out "$out" "$@" "${force[@]+"${force[@]}"}"
}

# train DATA_BIN SAVE_DIR [fairseq-train options...]   (resumes from SAVE_DIR/checkpoint_last.pt
# under the same spec only; FORCE=1 under another removes SAVE_DIR first)
train() {
  local data=$1 save=$2 complete=0 partial=0; shift 2
  [ -f "$save/.done" ] && complete=1
  [ -f "$save/checkpoint_last.pt" ] && partial=1
  if ! step_gate train "$save/" "$complete" --partial "$partial" --resumes --input "data=$data" \
    --root "$(dirname "$data")" -- "$@"; then
    log "train: $save finished, skipped"; return
  fi
  log "train: $save"
  mkdir -p "$save"
  fairseq-train "$data" --user-dir "$USER_DIR" --task summarization --criterion summarization_loss \
    --save-dir "$save" --log-format simple "$@" 2>&1 | tee -a "$save/train.log"
  touch "$save/.done"
  main_node || { log "train: done; node ${NODE_RANK:-${SLURM_NODEID:-}} leaves decoding and scoring to node 0"; exit 0; }
}

# decoded OUT_FILE: true when fairseq-generate finished OUT_FILE: it prints its closing "Generate
# <subset> with beam=..." line to stdout last, so an interrupted run (no such line) is redone
decoded() { [ -s "$1" ] && grep -q "^Generate" "$1" 2>/dev/null; }

# generate DATA_BIN CHECKPOINT OUT_FILE [BPE] [fairseq-generate options...]
#   BPE: "spm" (the default: fairseq-sum-prepare's data, Moses tokenizer + DATA_BIN/spm.model) or
#   "gpt2:BART_DIR" (the GPT-2 BPE of bart_binarize, no tokenizer)
generate() {
  local data=$1 ckpt=$2 out=$3 bpe=spm text
  shift 3
  case ${1:-} in spm|gpt2:*) bpe=$1; shift ;; esac
  case $bpe in
    spm) text=(--tokenizer sum_moses --bpe sentencepiece --sentencepiece-model "$data/spm.model") ;;
    gpt2:*) text=(--bpe gpt2 --gpt2-encoder-json "${bpe#gpt2:}/encoder.json" --gpt2-vocab-bpe "${bpe#gpt2:}/vocab.bpe") ;;
  esac
  local complete=0
  decoded "$out" && complete=1
  if ! step_gate generate "$out" "$complete" --input "data=$data" --input "checkpoint=$ckpt" --field "bpe=${bpe%%:*}" \
    --root "$(dirname "$data")" -- "$@"; then
    log "generate: $out exists, skipped"; return
  fi
  log "generate: $ckpt -> $out"
  # the absolute data path goes into generate's log, where fairseq-sum-score finds the references
  fairseq-generate "$(cd "$data" && pwd)" --user-dir "$USER_DIR" --task summarization --path "$ckpt" "${text[@]}" \
    --log-format simple --log-interval 10 "$@" > "$out" 2> >(tee "$out.log" >&2)  # progress every 10 batches
}

# score GENERATE_OUTPUT [fairseq-sum-score options...]   (-> GENERATE_OUTPUT.rouge.json / .rouge.txt;
# skipped when the json was made from the same decoding, step_gate). The references are the untruncated gold summaries
# of DATA/bin/{split}.ref.jsonl: the scorer finds DATA in generate's log, GENERATE_OUTPUT.log, where
# generate() leaves its absolute path.
score() {
  local gen=$1 complete=0; shift
  [ -f "$gen.rouge.json" ] && complete=1
  if ! step_gate score "$gen.rouge.json" "$complete" --input "decoding=$gen" --root "$(dirname "$gen")" -- "$@"; then
    log "score: $gen.rouge.json exists, skipped"; return
  fi
  log "score: $gen"
  fairseq-sum-score --generate-output "$gen" --json "$gen.rouge.json" "$@" | tee "$gen.rouge.txt"
}

# ta_decode_top_checkpoints WORK NAME MAX_LEN_B "LENPENS" TOP_K [BPE] [fairseq-generate options...]:
# the Topic Assistant's test protocol (App. B, after Liu & Lapata 2019). The length penalty alpha is
# tuned on the validation set: checkpoint_best decodes it (beam 5) at each alpha of LENPENS and the
# alpha with the highest mean ROUGE-1/2/L F1 is kept (WORK/NAME/lenpen.txt). Then each of the TOP_K
# checkpoints with the lowest validation loss (fairseq's checkpoint.best_loss_*.pt of
# --keep-best-checkpoints) decodes the test set with it and is scored; WORK/NAME/test.mean.json is
# the mean of their scores (the paper's "averaged results"). Scorer options: the array
# TA_SCORE_FLAGS (default none; "{split}" in them becomes valid or test); the length-penalty flag:
# TA_LENPEN_FLAG (--lenpen-gnmt, GNMT's alpha; BART's recipe: fairseq's --lenpen). Decodings are named by checkpoint and alpha, so a resumed training
# or another alpha decodes again instead of reusing an older file.
ta_decode_top_checkpoints() {
  local work=$1 name=$2 max_len_b=$3 lenpens=$4 top_k=$5 alpha best out ckpt
  shift 5
  local save="$work/checkpoints/$name" res="$work/$name" outs=() ckpts=()
  local flag=${TA_LENPEN_FLAG:---lenpen-gnmt} score_flags=() f
  for f in "${TA_SCORE_FLAGS[@]+"${TA_SCORE_FLAGS[@]}"}"; do score_flags+=("${f//\{split\}/valid}"); done
  local common=(--beam 5 --max-len-a 0 --max-len-b "$max_len_b" --batch-size 32)
  mkdir -p "$res"
  for alpha in $lenpens; do
    out="$res/valid.lenpen$alpha.out"
    generate "$work/bin" "$save/checkpoint_best.pt" "$out" "$@" --gen-subset valid "${common[@]}" "$flag" "$alpha"
    score "$out" "${score_flags[@]+"${score_flags[@]}"}"
    outs+=("$alpha=$out.rouge.json")
  done
  best=$(python -m ledger.paper_tables pick-lenpen "$res/lenpen.txt" "${outs[@]}")
  log "length penalty: alpha $best (validation, $res/lenpen.txt)"
  mapfile -t ckpts < <(find "$save" -maxdepth 1 -name 'checkpoint.best_loss_*.pt' -printf '%f\n' \
    | sed -n 's/^checkpoint\.best_loss_\([0-9][0-9.]*\)\.pt$/\1 &/p' | sort -g | head -n "$top_k" | cut -d' ' -f2)
  if [ ${#ckpts[@]} -eq 0 ]; then
    echo "no checkpoint.best_loss_*.pt in $save (fairseq-train --keep-best-checkpoints)" >&2; exit 1
  fi
  [ ${#ckpts[@]} -eq "$top_k" ] || log "warning: ${#ckpts[@]} checkpoint(s) by validation loss, not $top_k" >&2
  outs=() score_flags=()
  for f in "${TA_SCORE_FLAGS[@]+"${TA_SCORE_FLAGS[@]}"}"; do score_flags+=("${f//\{split\}/test}"); done
  for ckpt in "${ckpts[@]}"; do
    out="$res/test.${ckpt%.pt}.lenpen$best.out"
    generate "$work/bin" "$save/$ckpt" "$out" "$@" --gen-subset test "${common[@]}" "$flag" "$best"
    score "$out" "${score_flags[@]+"${score_flags[@]}"}"
    outs+=("$out.rouge.json")
  done
  python -m ledger.paper_tables mean "$res/test.mean.json" "${outs[@]}"
  # the first of them (checkpoint_best's weights: the lowest validation loss) also under the name a
  # single decoding had, WORK/test.NAME.beam5.out (with its log, where the scorer finds the data, and
# its scores)
  for out in "" .log .rouge.json .spec.json .rouge.json.spec.json; do
    [ ! -f "${outs[0]%.rouge.json}$out" ] || cp -p "${outs[0]%.rouge.json}$out" "$work/test.$name.beam5.out$out"
  done
}
