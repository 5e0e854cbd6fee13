#!/usr/bin/env bash
# The ablation rows of Mem2Mem Table 2 (PubMed), each trained and scored like pubmed/mem2mem.sh (recipes/mem2mem_run.sh). The implicit
# extraction analysis runs for the rows with an encoder memory (enc_mem, transfer, comp, full); the
# others (hred, dec_mem) have none to extract with.
#
#   bash recipes/pubmed/ablation.sh PUBMED_DIR [ROW...]
#     ROW  hred | enc_mem | dec_mem | transfer | comp | full   (default: all six, in Table 2's order)
# Paper's ROUGE-1/2/L: Table 2 rows (recipes/README.md); paper's hardware: hardware not stated; 15 epochs, batch 16.
# Data: https://github.com/armancohan/long-summarization (pubmed-dataset/). More in recipes/README.md, "Reproducing a paper".
set -euo pipefail
DATA=${1:?usage: ablation.sh PUBMED_DIR [ROW...]}; shift
ROWS=${*:-hred enc_mem dec_mem transfer comp full}
RUN="$(dirname "$0")/../mem2mem_run.sh"
for ROW in $ROWS; do
  case $ROW in
    hred)     bash "$RUN" pubmed hred_base "$DATA" ablation_hred ;;                                   # Baseline HRED
    enc_mem)  bash "$RUN" pubmed mem2mem_base "$DATA" ablation_enc_mem --memory-decoder False \
                --mem-comp-weight 0 --mem-read-weight 0 ;;                                      # + Encoder Mem
    dec_mem)  bash "$RUN" pubmed mem2mem_base "$DATA" ablation_dec_mem --memory-encoder False \
                --memory-transfer False ;;                                                      # + Decoder Mem (from zeros)
    transfer) bash "$RUN" pubmed mem2mem_base "$DATA" ablation_transfer --mem-comp-weight 0 --mem-read-weight 0 ;;  # + Mem Transfer
    comp)     bash "$RUN" pubmed mem2mem_base "$DATA" ablation_comp --mem-read-weight 0 ;;            # + Reg L_comp
    full)     bash "$RUN" pubmed mem2mem_base "$DATA" ablation_full ;;                                # + Reg L_read
    *) echo "unknown row $ROW (hred enc_mem dec_mem transfer comp full)" >&2; exit 2 ;;
  esac
done
