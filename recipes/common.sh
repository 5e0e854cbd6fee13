# Shared steps of the recipes: prepare -> train -> generate -> score. Each step is skipped when its
# output exists, so a recipe can be re-run to resume. Source this file; set the variables it reads.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
USER_DIR="$REPO/fairseq_sum_plugins"

log() { echo "[$(date +%H:%M:%S)] $*"; }

# prepare JSONL_DIR OUT [fairseq-sum-prepare options...]
prepare() {
  local jsonl=$1 out=$2; shift 2
  if [ -f "$out/bin/prepare_args.json" ]; then log "prepare: $out/bin exists, skipped"; return; fi
  log "prepare: $jsonl -> $out"
  fairseq-sum-prepare --jsonl-dir "$jsonl" --out "$out" "$@"
}

# train DATA_BIN SAVE_DIR [fairseq-train options...]   (resumes from SAVE_DIR/checkpoint_last.pt)
train() {
  local data=$1 save=$2; shift 2
  if [ -f "$save/.done" ]; then log "train: $save finished, skipped"; return; fi
  log "train: $save"
  mkdir -p "$save"
  fairseq-train "$data" --user-dir "$USER_DIR" --task summarization --criterion summarization_loss \
    --save-dir "$save" --log-format simple "$@" 2>&1 | tee -a "$save/train.log"
  touch "$save/.done"
}

# generate DATA_BIN CHECKPOINT OUT_FILE [fairseq-generate options...]
generate() {
  local data=$1 ckpt=$2 out=$3; shift 3
  # fairseq-generate prints its closing "Generate <subset> with beam=..." line to stdout last, so an
  # interrupted run (no such line) is redone
  if [ -s "$out" ] && grep -q "^Generate" "$out" 2>/dev/null; then log "generate: $out exists, skipped"; return; fi
  log "generate: $ckpt -> $out"
  fairseq-generate "$data" --user-dir "$USER_DIR" --task summarization --path "$ckpt" \
    --tokenizer sum_moses --bpe sentencepiece --sentencepiece-model "$data/spm.model" "$@" \
    > "$out" 2> >(tee "$out.log" >&2)
}

# score GENERATE_OUTPUT [fairseq-sum-score options...]
score() {
  local gen=$1; shift
  log "score: $gen"
  fairseq-sum-score --generate-output "$gen" --json "$gen.rouge.json" "$@" | tee "$gen.rouge.txt"
}
