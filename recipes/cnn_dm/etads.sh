#!/usr/bin/env bash
# CNN/Daily Mail with the ETADS paper's setup (You et al., 2019, §4.1).
#
#   bash recipes/cnn_dm/etads.sh CNNDM [URL_LISTS]
#     CNNDM       HF `cnn_dailymail` 3.0.0 JSONL (a file, or a dir with train/validation/test .jsonl),
#                 or the raw story dirs "cnn/stories dailymail/stories" (quoted, space-separated)
#     URL_LISTS   abisee/cnn-dailymail url_lists dir (all_train/all_val/all_test.txt), with raw stories
#
# Environment: ARCH (etads_base; etads_baseline.sh sets the paper's "Basic model"), WORK (data/cnn_dm-etads: 400/100-token data of its own),
# NGPU (GPUs here, 1), PAPER_GPUS (4: the paper's 4 Titan Xp, emulated with --update-freq),
# MAX_UPDATE (200000), VOCAB (50000), FP16 (1 on GPU), COVERAGE_TYPE (wu | summary) and COVERAGE_BETA
# (wu and 1: the paper's coverage weight 1, below), BEAM (10),
# EXTRA (more fairseq-train flags, e.g. "--focus-layers 1,2" for the placements of Tables 5-6),
# NAME (ARCH: the checkpoint folder WORK/checkpoints/NAME and the output WORK/test.NAME.beamB.out;
# recipes/papers.sh names each row of Tables 2 and 4-6), SCORER (official: ROUGE-1.5.5 through
# fairseq-sum-score --scorer official, as Table 2's "computed by the official ROUGE script";
# rouge155-py, its Python port, where the perl script is not installed).
#
# Paper -> flags:
#   N = 4 layers, h = 8, d_m 512, d_f 2048, post-LN,     --arch etads_base (etads_baseline: no focus /
#   one shared vocabulary                                  saliency); shared embeddings in the preset
#   documents <= 400 tokens, summaries <= 100            --max-src-tokens 400 --max-tgt-tokens 100 of
#                                                          the data preparation (sentencepiece pieces
#                                                          of a VOCAB-piece joined vocabulary; the
#                                                          paper truncates words, 50k-word vocabulary)
#   Adam (0.9, 0.998, 1e-8)                              --adam-betas '(0.9, 0.998)' --adam-eps 1e-8
#   Noam decay, warm-up 8000                             --lr-scheduler inverse_sqrt --warmup-updates 8000:
#       Noam lr(s) = f d^-0.5 min(s^-0.5, s w^-1.5) is a linear warm-up from 0 to f d^-0.5 w^-0.5, then
#       peak * sqrt(w / s): exactly fairseq's inverse_sqrt with --lr = peak (warm-up from 0). The
#       paper gives no factor f; we use OpenNMT-py's -learning_rate 2 of its Transformer recipes:
#       --lr 2 * 512^-0.5 * 8000^-0.5 = 0.000988
#   gradient clipping 2                                  --clip-norm 2
#   batch 4096 (OpenNMT-py: tokens per GPU, 4 GPUs)      --max-tokens 4096 --update-freq PAPER_GPUS/NGPU
#   200,000 steps                                        --max-update 200000
#   dropout "0.8"                                        --dropout 0.2 (0.8 read as the keep probability;
#                                                          a drop rate of 0.8 does not train)
#   NLL loss (ETADS eq. 11), no label smoothing mentioned      --criterion summarization_loss --label-smoothing 0
#   beam 10, minimum length 35                           --beam 10 --min-len 35 (--max-len-b 100)
#   length penalty alpha 0.9 (Wu et al.)                 --lenpen-gnmt 0.9       = OpenNMT-py -length_penalty wu -alpha 0.9
#   beam search "with coverage technique (Tu et    --coverage-penalty COVERAGE_BETA (1) --coverage-penalty-type
#    al.) ... the coverage weight is set to 1",       COVERAGE_TYPE (wu) --lenpen-gnmt 0.9: GNMT's coverage
#    length penalty (Wu et al.) alpha 0.9, beta 5      penalty beta * sum_j log min(sum_i a_ij, 1), Tu et al.'s
#                                                      coverage C_j with fertility 1, weight 1, and "beta 5"
#                                                      read as the constant 5 of GNMT's lp
#                                                      (tasks/sequence_generator.py's docstring). The other
#                                                      reading, OpenNMT-py's published CNN/DM decoding
#                                                      (-coverage_penalty summary -beta 5, which matches
#                                                      every other decoding number of §4.1):
#                                                      COVERAGE_TYPE=summary COVERAGE_BETA=5. With wu at
#                                                      beta 1 on 400-token sources the coverage term is
#                                                      hundreds of nats and ranks the hypotheses.
#                                                      The penalty rescores finished hypotheses (OpenNMT-py:
#                                                      at every step, -stepwise_penalty).
#   ROUGE F1 (pyrouge, "official ROUGE script")          fairseq-sum-score --scorer official (ROUGE-1.5.5)
#                                                          --report prf (Tables 5-6: precision, recall)
# Paper's ROUGE-1/2/L: 41.75/19.01/38.89 (beam 10); paper's hardware: 4 Titan Xp, 200k steps.
# Data: https://cs.nyu.edu/~kcho/DMQA/ stories + https://github.com/abisee/cnn-dailymail url lists (HF: abisee/cnn_dailymail 3.0.0). More in recipes/README.md, "Reproducing a paper".
source "$(dirname "$0")/../common.sh"
CNNDM=${1:?usage: etads.sh CNNDM [URL_LISTS]}
URL_LISTS=${2:-}
ARCH=${ARCH:-etads_base}
WORK=${WORK:-data/cnn_dm-etads}
PAPER_GPUS=${PAPER_GPUS:-4}
MAX_UPDATE=${MAX_UPDATE:-200000}
VOCAB=${VOCAB:-50000}
COVERAGE_TYPE=${COVERAGE_TYPE:-wu}
COVERAGE_BETA=${COVERAGE_BETA:-1}
case $COVERAGE_TYPE in wu|summary) ;; *) echo "${0##*/}: COVERAGE_TYPE must be wu or summary, got '$COVERAGE_TYPE'" >&2; exit 2 ;; esac
require_number COVERAGE_BETA
BEAM=${BEAM:-10}
NAME=${NAME:-$ARCH}
SCORER=${SCORER:-official}
case $SCORER in official|rouge155-py|rouge-score) ;; *) echo "${0##*/}: SCORER must be official or rouge155-py, got '$SCORER'" >&2; exit 2 ;; esac
require_name NAME
for v in PAPER_GPUS MAX_UPDATE VOCAB BEAM; do require_int "$v" 1; done
gpu_setup "$PAPER_GPUS"
FP16_FLAG=$(fp16_flag)
LR=0.000988  # 2 * 512 ** -0.5 * 8000 ** -0.5: the Noam peak, see above

if ! converted "$WORK/jsonl" "$CNNDM" "${URL_LISTS:-}" cnn_dm; then
  if [ -f "$CNNDM" ] || ls "$CNNDM"/*.jsonl >/dev/null 2>&1; then
    python -m preprocess.cnndm_to_jsonl --jsonl "$CNNDM" --out "$WORK/jsonl"
  else
    # shellcheck disable=SC2086
    python -m preprocess.cnndm_to_jsonl --stories-dir $CNNDM ${URL_LISTS:+--url-lists "$URL_LISTS"} --out "$WORK/jsonl"
  fi
fi
prepare "$WORK/jsonl" "$WORK" --vocab-size "$VOCAB" --max-src-tokens 400 --max-tgt-tokens 100 --workers "$(nproc)"

# shellcheck disable=SC2086
train "$WORK/bin" "$WORK/checkpoints/$NAME" --arch "$ARCH" $FP16_FLAG "${DIST_FLAGS[@]}" ${EXTRA:-} \
  --optimizer adam --adam-betas '(0.9, 0.998)' --adam-eps 1e-8 --clip-norm 2 \
  --lr "$LR" --lr-scheduler inverse_sqrt --warmup-updates 8000 \
  --dropout 0.2 --label-smoothing 0 --max-tokens 4096 --update-freq "$UPDATE_FREQ" --max-update "$MAX_UPDATE" \
  --max-source-positions 512 --max-target-positions 128 --num-workers 4 \
  --eval-rouge --eval-rouge-args '{"beam": 1, "max_len_b": 100}' \
  --best-checkpoint-metric rouge_l --maximize-best-checkpoint-metric \
  --save-interval-updates 10000 --validate-interval-updates 10000 --keep-interval-updates 2 --no-epoch-checkpoints

OUT="$WORK/test.$NAME.beam$BEAM.out"
generate "$WORK/bin" "$WORK/checkpoints/$NAME/checkpoint_best.pt" "$OUT" \
  --gen-subset test --beam "$BEAM" --min-len 35 --max-len-a 0 --max-len-b 100 --batch-size 32 $FP16_FLAG \
  --lenpen-gnmt 0.9 --coverage-penalty "$COVERAGE_BETA" --coverage-penalty-type "$COVERAGE_TYPE"
score "$OUT" --scorer "$SCORER" --report prf
