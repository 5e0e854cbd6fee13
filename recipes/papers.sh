#!/usr/bin/env bash
# One command per table of each paper: runs the table's systems with the paper's settings (through
# the recipes of this folder), the baselines (fairseq-sum-baselines) and the table's analyses, then
# writes OUT/PAPER-TABLE.md: every row and column of the paper's table, the paper's figures (each
# cited by table and row) beside the run's, and for what cannot run here the reason in its row.
#
#   bash recipes/papers.sh PAPER TABLE [DATASET=RAW ...] [DATASET.aux=AUX ...] [RAW]
#     PAPER TABLE  tpt t2 | tpt t4 | tpt roles            TP-Transformer Table 2, Table 4, §4.4
#                  mem2mem t1 | mem2mem t3 | mem2mem t4   Mem2Mem Tables 1, 3, 4
#                  etads t2 | etads t4 | etads t5 | etads t6
#                  ta main | ta ss | ta topics            Topic Assistant Tables 2-5, 6, topics
#                  is t2 | is t3 | is sweep               information selection Tables 2, 3, Fig. 4
#                  list                                   the tables, with their datasets
#     DATASET=RAW  the raw data of a dataset of the table, in the format of its recipe (xsum,
#                  wikihow, arxiv, cnn_dm: recipes/tp_transformer_run.sh; pubmed, arxiv, newsroom:
#                  recipes/mem2mem_run.sh; nyt: recipes/nyt/transformer_ta.sh), DATASET.aux its AUX
#                  (the XSum split file, the CNN/DM url lists, the Wikihow split lists); a bare RAW
#                  is the table's first dataset. A dataset without RAW is not run: its rows say so.
#                  bart=BART_DIR adds the BART rows of "ta main" (recipes/topic_assistant_bart_run.sh;
#                  BART_ARCH, bart_large_ta, the BART row training it without _ta, and BART_EXTRA,
#                  more flags of those two runs only, e.g. bart_base_ta and the dimensions of a
#                  smaller model.pt).
#
# Datasets: tpt t2: xsum wikihow arxiv cnn_dm; tpt t4, roles: xsum; mem2mem t1: pubmed arxiv
# newsroom; t3: pubmed arxiv; t4: pubmed; etads: cnn_dm; ta: cnn_dm xsum (nyt: refused without the
# licensed corpus); is: newsroom.
#
# Environment: OUT (data/papers/PAPER: one folder per paper, so that its tables share their runs;
# OUT/DATASET is each dataset's WORK), SMOKE (1: tiny models, a few updates, small beams, for a CPU
# run of every step in minutes; the written table says so in its header, as it does whenever a run
# it shows was made under SMOKE=1), PRESET (base; small: the *_small presets), FORCE (1: redo the
# steps whose recorded spec differs from this run's -- SMOKE, PRESET, RAW, flags, labels --, which
# a re-run otherwise refuses, naming the difference: recipes/common.sh step_gate), PROBE_LABELS (tpt t4: a folder with pos.conllu, dep.conllu and nel.conllu, the
# labels of the training summaries written by any tagger over `fairseq-sum-probe --write-words`, and
# TASK.valid.MODEL.conllu, the labels of each model's own dev summaries, the probes' evaluation set
# as in App. C (their words: `fairseq-sum-probe --eval-split valid --eval-generate-output
# OUT/xsum/valid.MODEL.beam4.out --write-words`; without them the probes are evaluated on held-out
# training references, and the table says so); or SPACY_MODEL, an installed spaCy pipeline, which
# labels both), PROBE_EXTRA (more fairseq-sum-probe flags), SCORER
# (ETADS: official, ROUGE-1.5.5 as its Table 2; rouge155-py, the Python port, where the perl script
# is not installed; the other tables score with fairseq-sum-score's default, rouge155-py, equal to
# ROUGE-1.5.5 per document), and every variable of the recipes it calls (MAX_UPDATE, EXTRA, NGPU,
# LENPENS, ...), passed on.
#
# Rows without a run here: published systems this project does not implement (the other rows of
# Mem2Mem Table 1 and ETADS Table 2), BertSUM / UNILM / MASS (+TA) (no weights here), NYT (licensed:
# recipes/nyt/transformer_ta.sh says what it needs), SRL probing (needs SRL labels of the summaries).
# The information selection tables train this project's gated transformer from scratch with the
# paper's lambdas (the paper fine-tunes T5-base: recipes/newsroom/t5_gated.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/common.sh"
USAGE="usage: papers.sh PAPER TABLE [DATASET=RAW ...] [RAW]   (papers.sh list: the tables)"
PAPER=${1:?$USAGE}
if [ "$PAPER" = list ]; then exec python -m ledger.paper_tables list; fi
TABLE=${2:?$USAGE}
shift 2
DATASETS=$(python -m ledger.paper_tables datasets "$PAPER" "$TABLE") || exit 2
OUT=${OUT:-data/papers/$PAPER}
PRESET=${PRESET:-base}
case $PRESET in base|small) ;; *) echo "${0##*/}: PRESET must be base or small, got '$PRESET'" >&2; exit 2 ;; esac

declare -A RAW_OF=() AUX_OF=()
FIRST=${DATASETS%% *}
GIVEN=0
for arg in "$@"; do
  case $arg in
    *.aux=*) key=${arg%%.aux=*}; AUX_OF[$key]=${arg#*.aux=} ;;
    *=*) key=${arg%%=*}; RAW_OF[$key]=${arg#*=}; GIVEN=$((GIVEN + 1)) ;;
    *) key=$FIRST; RAW_OF[$key]=$arg; GIVEN=$((GIVEN + 1)) ;;
  esac
  case " $DATASETS bart " in
    *" $key "*) ;;
    *) echo "${0##*/}: $PAPER $TABLE has no dataset '$key' (its datasets: $DATASETS)" >&2; exit 2 ;;
  esac
  if [ "$key" != nyt ] && [ -z "${RAW_OF[$key]:-}${AUX_OF[$key]:-}" ]; then
    echo "${0##*/}: '$arg': an empty path" >&2; exit 2
  fi
done
for key in ${AUX_OF[@]+"${!AUX_OF[@]}"}; do
  [ -n "${RAW_OF[$key]:-}" ] || { echo "${0##*/}: $key.aux given without $key=RAW" >&2; exit 2; }
done
[ "$GIVEN" -gt 0 ] || { echo "$USAGE" >&2; echo "${0##*/}: no data given (datasets of $PAPER $TABLE: $DATASETS)" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# every step records them in its spec (common.sh step_gate): a re-run under others is refused
export SMOKE=${SMOKE:-0} PRESET

# SMOKE=1: every step at a scale a CPU runs in minutes (tiny dims, a few updates, small beams)
if [ "${SMOKE:-0}" = 1 ]; then
  PRESET=small
  export FP16=0 NGPU=1 PAPER_GPUS=1 PAPER_ACCUM=1 VOCAB=${VOCAB:-500} MAX_UPDATE=${MAX_UPDATE:-3}
  export SAVE_INTERVAL=${SAVE_INTERVAL:-1} BATCH=${BATCH:-8} EPOCHS=${EPOCHS:-1} TOPICS=${TOPICS:-8}
  export TOPICS_N=${TOPICS_N:-2} MAX_SRC=${MAX_SRC:-200} MAX_TGT=${MAX_TGT:-40} BEAM=${BEAM:-2}
  export TEST_SUBSET=${TEST_SUBSET:-8} GATE_WARMUP=${GATE_WARMUP:-0}
  export SCORER=${SCORER:-rouge155-py}
  SMOKE_DIMS="--encoder-embed-dim 32 --encoder-ffn-embed-dim 64 --encoder-attention-heads 2"
  SMOKE_LAYERS="--encoder-layers 1 --decoder-layers 1"
  SMOKE_MEM2MEM="--embed-dim 32 --encoder-hidden-size 32 --decoder-hidden-size 64 --memory-attn-dim 32"
else
  SMOKE_DIMS="" SMOKE_LAYERS="" SMOKE_MEM2MEM=""
fi
SCORER=${SCORER:-official}
case $SCORER in official|rouge155-py|rouge-score) ;; *) echo "${0##*/}: SCORER must be official or rouge155-py, got '$SCORER'" >&2; exit 2 ;; esac

given() { [ -n "${RAW_OF[$1]:-}" ]; }
raw_args() {  # RA=(RAW [AUX]) of dataset $1 (a RAW of several words, "cnn/stories dm/stories", stays one)
  RA=("${RAW_OF[$1]}")
  if [ -n "${AUX_OF[$1]:-}" ]; then RA+=("${AUX_OF[$1]}"); fi
}
recipe() {  # recipe SCRIPT DATASET ENV... -- ARGS...: one recipe run, WORK = OUT/DATASET
  local script=$1 ds=$2 envs=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  log "papers: $PAPER $TABLE: $script on $ds (${envs[*]})"
  env WORK="$OUT/$ds" "${envs[@]}" bash "$HERE/$script" "$@"
}
baselines() { baselines_once "$OUT/$1" "$OUT/$1/baselines.json"; }

# ------------------------------------------------------------------------------ TP-Transformer
tpt_models() {  # the three models of Table 2 on dataset $1
  local ds=$1 model
  raw_args "$ds"
  for model in t5_transformer tp_transformer_continuous tp_transformer; do
    recipe tp_transformer_run.sh "$ds" NAME="$model" "EXTRA=$SMOKE_DIMS $SMOKE_LAYERS ${EXTRA:-}" \
      -- "$ds" "${model}_$PRESET" "${RA[@]}"
  done
  baselines "$ds"
}

tpt_t4() {  # probes trained on the training references, evaluated on each model's own dev summaries
  local task model
  tpt_models xsum
  for task in pos dep nel; do
    if ! { [ -n "${PROBE_LABELS:-}" ] && [ -f "$PROBE_LABELS/$task.conllu" ]; } && [ -z "${SPACY_MODEL:-}" ]; then
      log "probe $task: no PROBE_LABELS/$task.conllu nor SPACY_MODEL: its rows say 'not run'"; continue
    fi
    for model in t5_transformer tp_transformer; do tpt_probe "$task" "$model"; done
  done
}

# tpt_probe TASK MODEL: one probe of Table 4 (OUT/xsum/probe.TASK.MODEL.json), through step_gate.
# Its spec holds every file it reads by content: the data, the checkpoint, the training labels
# (PROBE_LABELS/TASK.conllu), and when evaluated on the model's own dev summaries the decoding and
# their labels (PROBE_LABELS/TASK.valid.MODEL.conllu): labels added later change the spec, so the
# old JSON is refused (made again with FORCE=1), never silently kept
tpt_probe() {
  local task=$1 model=$2 ckpt gen labels=() evaluation=() inputs out
  ckpt="$OUT/xsum/checkpoints/$model/checkpoint_best.pt"
  out="$OUT/xsum/probe.$task.$model.json"
  if [ -n "${PROBE_LABELS:-}" ] && [ -f "$PROBE_LABELS/$task.conllu" ]; then labels=(--labels "$PROBE_LABELS/$task.conllu")
  else labels=(--spacy-model "$SPACY_MODEL"); fi
  # App. C: evaluated on the model's own dev summaries (its beam-4 decoding of Table 2),
  # labelled by the same tagger; without their labels, on held-out training references
  gen="$OUT/xsum/valid.$model.beam4.out"
  if [ -n "${SPACY_MODEL:-}" ] && [ -z "${PROBE_LABELS:-}" ]; then
    evaluation=(--eval-split valid --eval-generate-output "$gen")
  elif [ -f "${PROBE_LABELS:-}/$task.valid.$model.conllu" ]; then
    evaluation=(--eval-split valid --eval-generate-output "$gen" --eval-labels "$PROBE_LABELS/$task.valid.$model.conllu")
  fi
  inputs=(--input "data=$OUT/xsum/bin" --input "checkpoint=$ckpt")
  [ "${labels[0]}" != --labels ] || inputs+=(--input "labels=${labels[1]}")
  if [ ${#evaluation[@]} -gt 0 ]; then inputs+=(--input "decoding=$gen"); fi
  if [ ${#evaluation[@]} -gt 4 ]; then inputs+=(--input "eval labels=${evaluation[5]}"); fi
  # shellcheck disable=SC2086
  if ! step_gate probe "$out" "$([ -f "$out" ] && echo 1 || echo 0)" \
    "${inputs[@]}" --root "$OUT" -- "${labels[@]}" "${evaluation[@]+"${evaluation[@]}"}" ${PROBE_EXTRA:-}; then
    log "probe $task $model: exists, skipped"; return 0
  fi
  if [ ${#evaluation[@]} -eq 0 ]; then
    log "probe $task $model: no PROBE_LABELS/$task.valid.$model.conllu (labels of the words" \
      "'fairseq-sum-probe --eval-split valid --eval-generate-output $gen --write-words' writes):" \
      "evaluated on held-out training references"
  fi
  log "probe $task $model"
  # shellcheck disable=SC2086
  fairseq-sum-probe "$OUT/xsum/bin" --path "$ckpt" --task "$task" "${labels[@]}" \
    "${evaluation[@]+"${evaluation[@]}"}" ${PROBE_EXTRA:-} --json "$out.tmp"
  mv "$out.tmp" "$out"
}

tpt_roles() {
  local ckpt="$OUT/xsum/checkpoints/tp_transformer/checkpoint_best.pt" o="$OUT/xsum/roles.tp_transformer.json"
  tpt_models xsum
  gated "roles: tp_transformer on xsum valid" "$o" "$o" --input "data=$OUT/xsum/bin" --input "checkpoint=$ckpt" \
    --root "$OUT" -- fairseq-sum-roles "$OUT/xsum/bin" --path "$ckpt" --split valid --json "$o" --png "${o%.json}.png"
}

# ------------------------------------------------------------------------------------- Mem2Mem
mem2mem_models() {
  local ds=$1 arch
  raw_args "$ds"
  for arch in hred_base mem2mem_base; do
    recipe mem2mem_run.sh "$ds" "EXTRA=$SMOKE_MEM2MEM ${EXTRA:-}" -- "$ds" "$arch" "${RA[@]}"
  done
  baselines "$ds"
}

lexrank() {
  local ds=$1
  if ! step_gate lexrank "$OUT/$ds/lexrank.rouge.json" "$([ -f "$OUT/$ds/lexrank.rouge.json" ] && echo 1 || echo 0)" \
    --input "data=$OUT/$ds/bin" -- --sentences 10; then
    log "lexrank: $ds exists, skipped"; return
  fi
  log "lexrank: $ds (10 sentences, threshold 0.1)"
  python -m fairseq_sum_plugins.evaluation.baselines.lexrank --data "$OUT/$ds" --sentences 10 \
    --out "$OUT/$ds/lexrank.txt" --json "$OUT/$ds/lexrank.rouge.json"
}

novel() {  # copied n-grams of a Mem2Mem decoding (Table 4)
  local gen="$OUT/pubmed/test.$1.beam4.out"
  if ! step_gate "novel n-grams" "$gen.novel.json" "$([ -f "$gen.novel.json" ] && echo 1 || echo 0)" \
    --input "decoding=$gen" -- --novel-ngrams 5,10,15,20; then
    log "novel n-grams: $1 exists, skipped"; return
  fi
  log "novel n-grams: $1"
  fairseq-sum-score --generate-output "$gen" --novel-ngrams 5,10,15,20 --bootstrap-samples 0 \
    --json "$gen.novel.json" >/dev/null
}

# --------------------------------------------------------------------------------------- ETADS
etads_models() {
  local name flags counts=()
  raw_args cnn_dm
  while read -r name flags; do
    recipe cnn_dm/etads.sh cnn_dm ARCH=etads_baseline NAME="etads_$name" \
      "EXTRA=$SMOKE_DIMS ${EXTRA:-} $flags" -- "${RA[@]}"
    counts+=("$OUT/cnn_dm/checkpoints/etads_$name/checkpoint_best.pt" "$OUT/cnn_dm/etads_$name.params.json")
  done < <(python -m ledger.paper_tables etads-systems "$TABLE")
  # made again on every run (no step_gate): counting a checkpoint's parameters is cheap and
  # deterministic, so the count is never of an older checkpoint; one process for the table's models
  python -m ledger.paper_tables params "${counts[@]}"
  baselines cnn_dm
}

# ----------------------------------------------------------------------------- Topic Assistant
ta_models() {
  local ds=$1 name arch ta
  raw_args "$ds"
  for name in transformer transformer_ta; do
    # the baseline on transformer_ta's own (default) cell: at the base size the *_default_cell_
    # preset (t5_transformer_base is TP-Transformer's T5-cell model)
    arch=transformer_ta_$PRESET
    if [ "$name" = transformer ]; then
      arch=t5_transformer_small; [ "$PRESET" = small ] || arch=t5_transformer_default_cell_$PRESET
    fi
    recipe topic_assistant_run.sh "$ds" NAME="$name" ARCH="$arch" \
      "EXTRA=$SMOKE_DIMS $SMOKE_LAYERS ${EXTRA:-}" -- "$ds" "${RA[@]}"
  done
  baselines "$ds"
  if given bart; then
    for name in bart bart_ta; do
      # the BART row: fairseq's BART fine-tuned alone (TA=0, BART_ARCH without its _ta)
      if [ "$name" = bart ]; then ta=0 arch=${BART_ARCH:-bart_large_ta}; arch=${arch%_ta}
      else ta=1 arch=${BART_ARCH:-bart_large_ta}; fi
      recipe topic_assistant_bart_run.sh "$ds/bart" NAME="$name" TA="$ta" ARCH="$arch" \
        "EXTRA=${BART_EXTRA:-}" \
        -- "$ds" "${RAW_OF[$ds]}" "${RAW_OF[bart]}" ${AUX_OF[$ds]:-}
      # the row's scores beside the others, with the spec records of the score files they are
      # the mean of (the table's SMOKE mark, run_spec.smoke_runs); copied again on every run
      mkdir -p "$OUT/$ds/$name"
      cp -p "$OUT/$ds/bart/$name/test.mean.json" "$OUT/$ds/$name/test.mean.json"
      rm -f "$OUT/$ds/$name"/*.spec.json
      for f in "$OUT/$ds/bart/$name"/*.spec.json; do [ ! -f "$f" ] || cp -p "$f" "$OUT/$ds/$name/"; done
    done
  fi
}

ta_ss() {
  local ds=$1 name first
  for name in transformer transformer_ta; do
    first="$OUT/$ds/test.$name.beam5.out"
    if ! step_gate "semantic similarity" "$OUT/$ds/$name.ss.json" "$([ -f "$OUT/$ds/$name.ss.json" ] && echo 1 || echo 0)" \
      --input "decoding=$first" --input "data=$OUT/$ds/bin"; then
      log "semantic similarity: $ds $name exists, skipped"; continue
    fi
    log "semantic similarity (TA eq. 10): $ds $name"
    fairseq-sum-score --generate-output "$first" --data "$OUT/$ds/bin" --topic-model "$OUT/$ds/bin/topic_model.npz" \
      --bootstrap-samples 0 --json "$OUT/$ds/$name.ss.json" >/dev/null
  done
}

# ------------------------------------------------------------------------ information selection
is_model() {  # is_model NAME LAMBDA SWEEP_SUBSET [THRESHOLDS] [train flags]
  recipe newsroom/transformer_gated.sh newsroom NAME="$1" LAMBDA="$2" SWEEP_SUBSET="$3" \
    SWEEP_THRESHOLDS="$4" ARCH="transformer_gated_$PRESET" THRESHOLD=0.1 \
    "EXTRA=$SMOKE_DIMS $SMOKE_LAYERS ${EXTRA:-} ${5:-}" -- "${RAW_OF[newsroom]}"
}

# MEASURE=N (>= 2): after the table, N updates of the paper's first model at its paper dims (PRESET
# base, whatever SMOKE says) with MEASURE_BATCH (4) documents a batch on the first given dataset's
# prepared data, no checkpoint written: the table's header gives its seconds per update and per
# document and the paper's schedule at that speed (paper_tables.PAPER_SCALE), in hours.
MEASURE_ARGS=()
measure_speed() {
  local ds arch log extra=()
  [ "${MEASURE:-0}" != 0 ] || return 0
  require_int MEASURE 2
  MEASURE_BATCH=${MEASURE_BATCH:-4}
  require_int MEASURE_BATCH 1
  for ds in $DATASETS; do given "$ds" && break; done
  [ -f "$OUT/$ds/bin/prepare_args.json" ] || { log "measure: no prepared data in $OUT/$ds"; return 0; }
  arch=$(python -m ledger.paper_tables scale-arch "$PAPER")
  if [ "$PAPER" = ta ]; then extra=(--side-data theta); fi
  log="$OUT/$ds/measure.$arch.log"
  log "measure: $MEASURE updates of $arch, $MEASURE_BATCH documents a batch -> $log"
  fairseq-train "$OUT/$ds/bin" --user-dir "$USER_DIR" --task summarization --criterion summarization_loss \
    --arch "$arch" "${extra[@]+"${extra[@]}"}" --optimizer adam --lr 1e-4 --batch-size "$MEASURE_BATCH" \
    --max-update "$MEASURE" --no-save --disable-validation --log-format simple --log-interval 1 \
    --max-source-positions 1100 --max-target-positions 300 --num-workers 0 --seed 1 > "$log" 2>&1
  MEASURE_ARGS=(--measure "$log" "$MEASURE_BATCH" "${OMP_NUM_THREADS:-$(nproc)}")
}

# -------------------------------------------------------------------------------------- tables
run_table() {
  local ds
  case $PAPER:$TABLE in
    tpt:t2) for ds in $DATASETS; do if given "$ds"; then tpt_models "$ds"; fi; done ;;
    tpt:t4) given xsum && tpt_t4 ;;
    tpt:roles) given xsum && tpt_roles ;;
    mem2mem:t1|mem2mem:t3|mem2mem:t4)
      for ds in $DATASETS; do
        given "$ds" || continue
        mem2mem_models "$ds"
        if [ "$TABLE" = t3 ]; then lexrank "$ds"; fi
        if [ "$TABLE" = t4 ]; then novel hred_base; novel mem2mem_base; fi
      done ;;
    etads:*) given cnn_dm && etads_models ;;
    ta:main|ta:ss|ta:topics)
      for ds in cnn_dm xsum; do
        given "$ds" || continue
        ta_models "$ds"
        if [ "$TABLE" = ss ]; then ta_ss "$ds"; fi
        if [ "$TABLE" = topics ]; then  # made again on every run (no step_gate): reading the
          # fitted topic model's top words is cheap and deterministic, never of an older model
          python -m ledger.paper_tables topic-words "$OUT/$ds/bin" "$OUT/$ds/topics.json"
        fi
      done
      if [ -n "${RAW_OF[nyt]+x}" ]; then recipe nyt/transformer_ta.sh nyt -- "${RAW_OF[nyt]}"; fi ;;
    is:t2|is:sweep)
      given newsroom || return 0
      is_model same 0.1 test ""
      [ "$TABLE" = sweep ] || is_model diff 0.2 test "0 0.04 0.08 0.1 0.2" "--gate-per-head True" ;;
    is:t3)
      given newsroom || return 0
      for lam in 0 0.1 0.2 0.4 0.7; do
        name=l$lam; [ "$lam" != 0.1 ] || name=same
        is_model "$name" "$lam" valid 0.1
      done ;;
  esac
}

run_table
measure_speed
HEADER=()
if [ "${SMOKE:-0}" = 1 ]; then
  HEADER+=("SMOKE=1: tiny models ($SMOKE_DIMS), $MAX_UPDATE updates (Mem2Mem: $EPOCHS epoch), ETADS at beam $BEAM: the run's figures check the pipeline, not the paper.")
fi
python -m ledger.paper_tables write "$PAPER" "$TABLE" "$OUT" \
  "${HEADER[@]/#/--header=}" "${MEASURE_ARGS[@]+"${MEASURE_ARGS[@]}"}" --train-logs "$OUT"
