# Shared steps of the Mem2Mem recipes (recipes/{pubmed,arxiv,newsroom}): App. A.2's setup for both
# archs -- Adam at 2e-4, batch 16, gradient norm clipped at 2, 15 epochs, beam 4 at test time;
# vocabulary 50k, summaries cut at 200 tokens. Source this after common.sh.
#
# Environment: WORK (data dir), VOCAB (50000), MAX_SRC (4000 pieces kept by fairseq-sum-prepare; the
# model then keeps at most MAX_SENTS sentences x SENT_TOKENS tokens, App. A.2), MAX_SENTS (40),
# SENT_TOKENS (50), EPOCHS (15), BATCH (16), FP16 (0; 1 adds --fp16 on a GPU), EXTRA (more
# fairseq-train flags, e.g. smaller dims "--embed-dim 32 --decoder-hidden-size 64" for a CPU smoke run).
VOCAB=${VOCAB:-50000}
MAX_SRC=${MAX_SRC:-4000}
MAX_SENTS=${MAX_SENTS:-40}
SENT_TOKENS=${SENT_TOKENS:-50}
EPOCHS=${EPOCHS:-15}
BATCH=${BATCH:-16}
FP16_FLAG=$(FP16=${FP16:-0} fp16_flag)  # off by default here

# mem2mem_prepare JSONL_DIR MAX_TGT
mem2mem_prepare() {
  prepare "$1" "$WORK" --vocab-size "$VOCAB" --max-src-tokens "$MAX_SRC" --max-tgt-tokens "$2" --workers "$(nproc)"
}

# mem2mem_run ARCH NAME MAX_LEN_B [extra fairseq-train options...]
#   trains WORK/checkpoints/NAME, decodes the test split with beam 4 and scores it; for models with
#   an encoder memory also runs the implicit-extraction analysis (Table 3, Fig. 2 heatmaps).
mem2mem_run() {
  local arch=$1 name=$2 max_len_b=$3; shift 3
  local positions="--max-source-positions $((MAX_SRC + 1)) --max-target-positions $((max_len_b + 10))"
  train "$WORK/bin" "$WORK/checkpoints/$name" --arch "$arch" $FP16_FLAG $positions \
    --max-doc-sentences "$MAX_SENTS" --max-sentence-tokens "$SENT_TOKENS" \
    --optimizer adam --lr 2e-4 --clip-norm 2 --batch-size "$BATCH" --max-epoch "$EPOCHS" \
    --skip-invalid-size-inputs-valid-test --num-workers 4 --no-epoch-checkpoints ${EXTRA:-} "$@"
  local out="$WORK/test.$name.beam4.out"
  generate "$WORK/bin" "$WORK/checkpoints/$name/checkpoint_best.pt" "$out" $positions $FP16_FLAG \
    --gen-subset test --beam 4 --batch-size 16 --max-len-b "$max_len_b"
  score "$out"
  if [ "$arch" != mem2mem_base ]; then return; fi
  local extraction="$WORK/implicit_extraction.$name"
  if [ -f "$extraction/scores.json" ]; then log "implicit extraction: $extraction exists, skipped"; return; fi
  log "implicit extraction: $name"
  python -m fairseq_sum_plugins.analysis.implicit_extraction "$WORK/bin" \
    --path "$WORK/checkpoints/$name/checkpoint_best.pt" --split test --lead 10 \
    --out "$extraction" --png-index 0 --max-len-b "$max_len_b"
}
