# Shared steps of the Mem2Mem recipes (recipes/{pubmed,arxiv,newsroom}): App. A.2's setup for both
# archs -- Adam at 2e-4, batch 16, gradient norm clipped at 2, 15 epochs, beam 4 at test time;
# vocabulary 50k, summaries cut at 200 tokens. HRED and Mem2Mem are See et al.'s pointer-generator
# *with coverage* (Mem2Mem App. A.1: the features of §2's HRED baseline and of Mem2Mem, A.1.1 the
# pointer-generator, A.1.2 the decoder coverage): coverage attention (M2M eq. 16-17, the model's
# default) and See et al.'s coverage loss, sum_i min(a_ti, c_ti) per target token, with See et al.'s
# weight lambda = 1 (--coverage-loss True --coverage-loss-weight COVERAGE_WEIGHT; A.1.2 names the
# coverage vector only, the loss is See et al.'s). See et al. add the loss only for a last phase
# of training (3,000 iterations after convergence); Mem2Mem does not say when: here it is
# on from the first update (the project's choice; COVERAGE_WEIGHT=0 turns it off).
# Source this after common.sh.
#
# Environment: WORK (data dir), VOCAB (50000), MAX_SRC (4000: source pieces kept by
# fairseq-sum-prepare; PubMed / arXiv come truncated to App. A.2's 4 sections x 500 words by their
# converter, ~2000 words + <sep>s, which this rarely cuts), MAX_TGT (200: summary pieces kept by
# fairseq-sum-prepare; --max-target-positions is MAX_TGT + 1 for </s>, so no training or test
# example is filtered out by its length), MAX_SENTS / SENT_TOKENS (0 / 0: the model keeps every
# sentence and every piece that prepare kept; N caps the sentences per document / pieces per
# sentence, --max-doc-sentences / --max-sentence-tokens), EPOCHS (15), BATCH (16), FP16 (0; 1 adds
# --fp16 on a GPU), EXTRA (more fairseq-train flags, e.g. smaller dims "--embed-dim 32
# --decoder-hidden-size 64" for a CPU smoke run), COVERAGE_WEIGHT (1: See et al.'s lambda; 0: no
# coverage loss).
VOCAB=${VOCAB:-50000}
MAX_SRC=${MAX_SRC:-4000}
MAX_TGT=${MAX_TGT:-200}
MAX_SENTS=${MAX_SENTS:-0}
SENT_TOKENS=${SENT_TOKENS:-0}
EPOCHS=${EPOCHS:-15}
BATCH=${BATCH:-16}
COVERAGE_WEIGHT=${COVERAGE_WEIGHT:-1}
require_number COVERAGE_WEIGHT
if awk -v x="$COVERAGE_WEIGHT" 'BEGIN { exit !(x + 0 < 0) }'; then
  echo "${0##*/}: COVERAGE_WEIGHT must be >= 0, got $COVERAGE_WEIGHT" >&2; exit 2
fi
COVERAGE_FLAGS=(--coverage-loss True --coverage-loss-weight "$COVERAGE_WEIGHT")
if awk -v x="$COVERAGE_WEIGHT" 'BEGIN { exit !(x + 0 == 0) }'; then COVERAGE_FLAGS=(--coverage-loss False); fi
for v in VOCAB MAX_SRC MAX_TGT EPOCHS BATCH; do require_int "$v" 1; done
for v in MAX_SENTS SENT_TOKENS; do require_int "$v" 0; done
FP16_FLAG=$(FP16=${FP16:-0} fp16_flag)  # off by default here
# the paper's batch of BATCH documents (GPUs not stated) is split over NGPU x NNODES workers
UPDATE_FREQ=1 gpu_setup 1
if [ $(( BATCH % WORLD )) -ne 0 ]; then echo "BATCH=$BATCH is not divisible by $WORLD workers" >&2; exit 2; fi
if [ "$MAX_TGT" -le 0 ]; then echo "MAX_TGT must be > 0 (it sets --max-target-positions)" >&2; exit 2; fi

# mem2mem_prepare JSONL_DIR   (sources cut at MAX_SRC pieces, summaries at MAX_TGT)
mem2mem_prepare() {
  prepare "$1" "$WORK" --vocab-size "$VOCAB" --max-src-tokens "$MAX_SRC" --max-tgt-tokens "$MAX_TGT" --workers "$(nproc)"
}

# mem2mem_run ARCH NAME MAX_LEN_B [extra fairseq-train options...]
#   trains WORK/checkpoints/NAME, decodes the test split with beam 4 (summaries of at most MAX_LEN_B
#   pieces) and scores it; for mem2mem_base also runs the implicit-extraction analysis (Table 3,
#   Fig. 2 heatmaps), skipped with a message for a model without an encoder memory (ablation rows).
mem2mem_run() {
  local arch=$1 name=$2 max_len_b=$3; shift 3
  # positions cover the longest prepared target (and decoded summary) plus </s>
  local positions="--max-source-positions $((MAX_SRC + 1)) --max-target-positions $(( (MAX_TGT > max_len_b ? MAX_TGT : max_len_b) + 1 ))"
  train "$WORK/bin" "$WORK/checkpoints/$name" --arch "$arch" $FP16_FLAG $positions \
    --max-doc-sentences "$MAX_SENTS" --max-sentence-tokens "$SENT_TOKENS" \
    --optimizer adam --lr 2e-4 --clip-norm 2 --batch-size $(( BATCH / WORLD )) --max-epoch "$EPOCHS" "${DIST_FLAGS[@]}" \
    --skip-invalid-size-inputs-valid-test --num-workers 4 --no-epoch-checkpoints "${COVERAGE_FLAGS[@]}" ${EXTRA:-} "$@"
  local out="$WORK/test.$name.beam4.out"
  generate "$WORK/bin" "$WORK/checkpoints/$name/checkpoint_best.pt" "$out" $positions $FP16_FLAG \
    --gen-subset test --beam 4 --batch-size 16 --max-len-b "$max_len_b"
  score "$out"
  if [ "$arch" != mem2mem_base ]; then return; fi
  local extraction="$WORK/implicit_extraction.$name"
  if ! step_gate "implicit extraction" "$extraction/" "$([ -f "$extraction/scores.json" ] && echo 1 || echo 0)" \
    --input "data=$WORK/bin" --input "checkpoint=$WORK/checkpoints/$name/checkpoint_best.pt" -- "$max_len_b"; then
    log "implicit extraction: $extraction exists, skipped"; return
  fi
  log "implicit extraction: $name"
  python -m fairseq_sum_plugins.inspection.implicit_extraction "$WORK/bin" \
    --path "$WORK/checkpoints/$name/checkpoint_best.pt" --split test --lead 10 \
    --out "$extraction" --document 0 --max-len-b "$max_len_b" --skip-without-memory
}
