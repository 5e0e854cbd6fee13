"""Each paper's tables with its reported figures, and the run's figures written beside them
(``python -m ledger.paper_tables write PAPER TABLE OUT``, called last by
``recipes/papers.sh PAPER TABLE ...``, writes ``OUT/PAPER-TABLE.md``).

A table is a list of rows; each row has the paper's label, the paper's figures (cited by table and
row: ``Table 2, row "XSum / Dev / beam 1 / Transformer"``), and where this project can run the
system, the file under OUT that holds the run's figures and how to read them:

==============  ===============================================================================
source kind     file and figures
==============  ===============================================================================
``rouge``       a ``fairseq-sum-score --json`` file: ``rouge1`` ``rouge2`` ``rougeL`` ``meteor``
                (F1 in [0, 1], x 100), ``found_N`` = 100 (1 - ``novel_Ngram_hyp``), ``found_ref_N``
                (of the references), ``ss_sum_doc`` / ``ss_sum_gold`` (TA eq. 10, as they are);
                ``params_k`` from the JSON the argument names (ETADS Table 4's parameters / 1000)
                or ``params_m`` of the checkpoint it names (Mem2Mem Table 1's, / 10^6, counted
                when the table is written); the Topic Assistant's ``test.mean.json``
                (subcommand ``mean``: the mean of its top-3 checkpoints' scores) alike
``baseline``    ``fairseq-sum-baselines --json``: ``systems[NAME]``'s ROUGE (x 100)
``extraction``  ``implicit_extraction`` ``scores.json``: ``scores[NAME]``'s ROUGE (x 100)
``gate``        ``gate_sweep.json``: the row of a threshold (sparsity %, ROUGE in points)
``probe``       ``fairseq-sum-probe --json``: the cells of a layer (role / filler / final F1 x 100)
``roles``       ``fairseq-sum-roles --json``: % of role attention distributions with max > 0.98
``topics``      ``paper_tables topic-words``: the number of topics, and their top words listed
                below the table
==============  ===============================================================================

The shell's helpers: ``list``, ``datasets PAPER TABLE``, ``etads-systems TABLE`` (each ETADS row's
flags over ``etads_baseline``), ``params CKPT DEST [CKPT DEST ...]`` (one process for a table's
checkpoints), ``topic-words DATA DEST``, ``mean DEST JSON...`` (keeps their ``scorer``; files
of different scorers are refused), ``pick-lenpen RECORD ALPHA=JSON...`` (the alpha with the
highest validation mean of ROUGE-1/2/L F1: the project's choice, the Topic Assistant does not say
which ROUGE it tuned) and
``scale-arch PAPER`` (the model ``MEASURE`` times; ``PAPER_SCALE`` holds each paper's documents per
update and updates, from the paper or, where it is silent, the recipe).

A column that describes a system rather than measuring it (Mem2Mem Table 1's "Type") takes the
run's cell from the row's ``facts``. Under each title the written table names what made its
figures: the paper's scorer as the paper states it, and the ROUGE scorer (and METEOR
implementation) that each run file it read records (``scorer`` / ``meteor_impl``), naming the files
that record none.

A row the project cannot run (BertSUM, UNILM or MASS weights, licensed data, labelled data that is
not here, a published system it does not implement: figure copied) carries its reason instead of a
source; the written table says it in that row. A row whose file is missing (a system not run,
e.g. a dataset whose raw data was not given) says ``not run`` and names the file. Every row and
column of the paper's table is written either way.
"""

import argparse
import glob
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field

from fairseq_sum_plugins.cli.outputs import refuse_clobber

ROUGE = ("R-1", "R-2", "R-L")
ROUGE_KEYS = ("rouge1", "rouge2", "rougeL")


@dataclass
class Row:
    label: str
    paper: tuple  # the paper's figures, one per column (None: "-" in the paper)
    source: tuple = None  # (kind, relative path, argument) or None
    reason: str = ""  # why the project cannot run this row (with source None)
    facts: dict = field(default_factory=dict)  # run cells that describe the system, not measured
    # (Mem2Mem Table 1's "Type": {"type": "A"}), shown where the run's figures are read


@dataclass
class Table:
    paper: str
    key: str
    title: str
    columns: tuple
    keys: tuple  # the figure of each column in the source (see the module docstring)
    rows: list = field(default_factory=list)
    notes: tuple = ()
    digits: tuple = None  # digits after the point of each column (None: 2; 3 for TA eq. 10)
    paper_scorer: str = ""  # what the paper says made its figures (ROUGE, METEOR)


# ---------------------------------------------------------------------------- TP-Transformer
TPT_T2 = {  # Table 2: (dataset, split, beam) -> Transformer, TPT-c, TPT-d: R-1/R-2/R-L/METEOR
    ("xsum", "dev", 1): ((33.34, 12.07, 26.47, 22.28), (30.73, 10.38, 24.39, 21.14),
                         (34.61, 13.13, 27.59, 23.43)),
    ("xsum", "dev", 4): ((34.48, 13.08, 27.29, 24.59), (31.83, 11.28, 25.11, 22.39),
                         (35.70, 14.11, 28.38, 25.80)),
    ("xsum", "test", 1): ((33.22, 11.90, 26.32, 23.02), (30.74, 10.23, 24.32, 21.11),
                          (34.62, 12.98, 27.49, 24.38)),
    ("xsum", "test", 4): ((34.46, 12.97, 27.21, 24.42), (32.01, 11.26, 25.19, 22.45),
                          (35.84, 14.06, 28.40, 25.79)),
    ("wikihow", "dev", 1): ((33.11, 11.90, 25.46, 19.00), (28.44, 7.65, 20.07, 16.38),
                            (34.12, 12.36, 26.02, 20.16)),
    ("wikihow", "dev", 4): ((35.85, 13.32, 26.83, 21.57), (29.98, 8.34, 20.70, 17.95),
                            (36.54, 13.69, 27.21, 22.53)),
    ("wikihow", "test", 1): ((33.40, 12.18, 25.66, 19.31), (28.63, 7.82, 20.23, 16.49),
                             (34.19, 12.47, 25.99, 20.23)),
    ("wikihow", "test", 4): ((35.91, 13.49, 27.01, 21.57), (30.13, 8.50, 20.78, 18.11),
                             (36.70, 13.75, 27.36, 22.53)),
    ("arxiv", "dev", 1): ((35.08, 10.13, 31.86, 19.91), (32.27, 7.50, 29.34, 17.72),
                          (35.91, 10.32, 32.55, 20.82)),
    ("arxiv", "dev", 4): ((37.95, 11.48, 34.03, 23.31), (34.45, 8.40, 30.91, 20.17),
                          (38.35, 11.56, 34.32, 23.74)),
    ("arxiv", "test", 1): ((35.00, 9.98, 31.79, 19.72), (32.46, 7.53, 29.47, 17.75),
                           (35.82, 10.12, 32.46, 20.65)),
    ("arxiv", "test", 4): ((38.01, 11.33, 34.02, 23.19), (34.68, 8.50, 31.15, 20.17),
                           (38.36, 11.43, 34.29, 23.61)),
    # TPT-d CNN/DM dev beam 1 R-L is printed 31.77 (beside 37.73 and 36.99): copied as printed
    ("cnn_dm", "dev", 1): ((40.56, 18.18, 37.73, 31.91), (39.66, 17.45, 36.99, 31.15),
                           (40.61, 18.17, 31.77, 31.35)),
    ("cnn_dm", "dev", 4): ((41.97, 19.23, 38.84, 34.55), (41.49, 18.83, 38.45, 34.14),
                           (41.81, 19.11, 38.73, 34.49)),
    ("cnn_dm", "test", 1): ((39.83, 17.63, 37.02, 31.75), (39.10, 16.96, 36.41, 31.15),
                            (39.63, 17.35, 36.80, 31.57)),
    ("cnn_dm", "test", 4): ((41.22, 18.70, 38.09, 34.50), (40.68, 18.19, 37.70, 33.99),
                            (41.01, 18.38, 37.91, 34.34)),
}
TPT_SCORER = ("ROUGE (Lin, 2004), implementation not stated; METEOR: Meteor Universal (Denkowski "
              "and Lavie, 2014, cited in §1)")
TPT_DATASETS = {"xsum": "XSum", "wikihow": "Wikihow", "arxiv": "Arxiv", "cnn_dm": "CNN/DM"}
TPT_MODELS = (("Transformer", "t5_transformer"), ("TPT-c", "tp_transformer_continuous"),
              ("TPT-d", "tp_transformer"))


def tpt_t2():
    t = Table("tpt", "t2", "TP-Transformer Table 2: ROUGE-1/2/L and METEOR F1, dev and test, "
              "beam 1 and 4", ROUGE + ("METEOR",), ROUGE_KEYS + ("meteor",),
              paper_scorer=TPT_SCORER)
    for (ds, split, beam), figures in TPT_T2.items():
        for (model, name), fig in zip(TPT_MODELS, figures):
            label = (f"{TPT_DATASETS[ds]} / {split.capitalize()} / beam {beam} / {model} "
                     f'(Table 2, row "{TPT_DATASETS[ds]} {split.capitalize()} {beam}", {model})')
            gen = "valid" if split == "dev" else "test"
            t.rows.append(Row(label, fig, ("rouge", f"{ds}/{gen}.{name}.beam{beam}.out.rouge.json",
                                           None)))
    for ds, name in TPT_DATASETS.items():
        t.rows.append(Row(f"{name} / Test / Lead-3 (baseline, not in Table 2)", (None,) * 4,
                          ("baseline", f"{ds}/baselines.json", "lead3")))
    return t


TPT_T4 = {  # Table 4: task -> layer -> (Transformer filler/final, TPT-d role/filler/final)
    "POS": ((58.4, 58.4, 36.1, 57.1, 58.2), (65.4, 65.4, 43.6, 63.5, 64.4),
            (68.6, 68.3, 50.4, 67.4, 68.5), (70.7, 70.7, 50.4, 70.8, 72.1),
            (72.5, 72.5, 53.4, 73.3, 73.9), (73.3, 73.3, 56.0, 73.9, 74.5)),
    "DEP": ((78.1, 78.1, 53.1, 78.8, 78.9), (85.0, 85.0, 59.9, 84.8, 84.7),
            (87.1, 87.1, 66.7, 87.4, 87.3), (87.4, 87.4, 62.9, 88.3, 88.2),
            (85.0, 85.0, 64.8, 88.3, 87.6), (86.1, 86.1, 60.8, 86.8, 86.6)),
    "SRL": ((78.2, 78.2, 73.1, 78.5, 78.4), (79.0, 79.0, 73.8, 79.8, 79.3),
            (79.6, 79.6, 73.8, 79.9, 80.0), (78.7, 78.7, 73.1, 80.1, 80.2),
            (77.7, 77.7, 72.9, 79.9, 79.8), (78.1, 78.1, 71.8, 79.2, 78.2)),
    "NEL": ((59.7, 59.7, 33.3, 61.4, 60.8), (67.6, 67.6, 37.6, 68.1, 68.2),
            (69.6, 69.6, 41.5, 70.9, 71.0), (71.8, 71.8, 43.6, 74.3, 73.2),
            (72.3, 72.3, 44.7, 76.3, 75.7), (73.3, 73.3, 42.2, 76.1, 73.8)),
}
SRL_REASON = ("needs predicate-argument labels of the summaries (PropBank-style SRL, e.g. an "
              "AllenNLP/CoNLL-2012 SRL tagger's output); fairseq-sum-probe has no SRL task")


def tpt_t4():
    t = Table("tpt", "t4", "TP-Transformer Table 4: probing F1 of the XSum decoders "
              "(role / filler / final)", ("role", "filler", "final"), ("role", "filler", "final"))
    for task, layers in TPT_T4.items():
        for layer, fig in enumerate(layers, 1):
            for model, name, paper in (("Transformer", "t5_transformer", (None,) + fig[:2]),
                                       ("TPT-d", "tp_transformer", fig[2:])):
                label = f'{task} / layer {layer} / {model} (Table 4, row "{task} {layer}", {model})'
                if task == "SRL":
                    t.rows.append(Row(label, paper, None, SRL_REASON))
                else:
                    probe = f"xsum/probe.{task.lower()}.{name}.json"
                    t.rows.append(Row(label, paper, ("probe", probe, layer)))
    return t


def tpt_roles():
    t = Table("tpt", "roles", "TP-Transformer §4.4: role attention distributions with max > 0.98",
              ("% max > 0.98",), ("peaked",))
    # §4.4 gives a bound ("more than 90%", of the distributions "during the training of our
    # TP-TRANSFORMER models on the summarization datasets"), no one dataset or split: the run's
    # figure is TPT-d's on XSum valid
    t.rows.append(Row('TPT-d (§4.4: "more than 90%", while training on the summarization '
                      "datasets; the run: XSum valid)", ("more than 90",),
                      ("roles", "xsum/roles.tp_transformer.json", None)))
    return t


# --------------------------------------------------------------------------------- Mem2Mem
NO_WEIGHTS = "a published system this project does not implement (figure copied from the paper)"


M2M_SCORER = 'the official ROUGE (Table 1\'s caption: "as reported by the official ROUGE")'
M2M_TYPE = {"Lead-10 / 3 (Newsroom)": ("E", None), "Sent-CLF": ("E", None),
            "Sent-PTR": ("E", None), "Attn-Seq2Seq": ("A", None), "Ptr-Gen-Seq2Seq": ("A", None),
            "Discourse-aware": ("A", 14.3), "TLM (A)": ("A", 234), "TLM (H)": ("H", 234),
            "Mem2Mem": ("A", 14.7)}  # Table 1's "Type" and "# of params." (M; "-" is None)


def mem2mem_t1():
    t = Table("mem2mem", "t1", "Mem2Mem Table 1: type (A abstractive, E extractive, H hybrid), "
              "parameters and ROUGE-1/2/L F1", ("Type", "# of params. (M)") + ROUGE,
              ("type", "params_m") + ROUGE_KEYS, digits=(0, 1, 2, 2, 2), paper_scorer=M2M_SCORER)
    rows = [("Lead-10 / 3 (Newsroom)", {"pubmed": (37.45, 14.19, 34.07),
                                        "arxiv": (35.52, 10.33, 31.44),
                                        "newsroom": (13.7, 2.4, 11.2)}),
            ("Sent-CLF", {"pubmed": (45.01, 19.91, 41.16), "arxiv": (34.01, 8.71, 30.31),
                          "newsroom": (15.4, 2.7, 12.8)}),
            ("Sent-PTR", {"pubmed": (43.30, 17.92, 39.47), "arxiv": (42.32, 15.63, 38.06),
                          "newsroom": (15.9, 2.8, 13.0)}),
            ("Attn-Seq2Seq", {"pubmed": (31.55, 8.52, 27.38), "arxiv": (29.3, 6.00, 25.56),
                              "newsroom": (6.21, 1.07, 5.68)}),
            ("Ptr-Gen-Seq2Seq", {"pubmed": (35.86, 10.22, 29.69), "arxiv": (32.06, 9.04, 25.16),
                                 "newsroom": (14.66, 2.26, 11.44)}),
            ("Discourse-aware", {"pubmed": (38.93, 15.37, 35.21), "arxiv": (35.80, 11.05, 31.80),
                                 "newsroom": (None, None, None)}),
            ("TLM (A)", {"pubmed": (37.06, 11.69, 34.27), "arxiv": (39.65, 12.15, 35.76),
                         "newsroom": (20.40, 6.90, 17.10)}),
            ("TLM (H)", {"pubmed": (42.13, 16.27, 39.21), "arxiv": (41.62, 14.69, 38.03),
                         "newsroom": (20.10, 6.50, 16.60)}),
            ("Mem2Mem", {"pubmed": (42.06, 16.56, 38.11), "arxiv": (41.81, 14.99, 37.24),
                         "newsroom": (20.00, 6.60, 16.80)})]
    names = {"pubmed": "PubMed", "arxiv": "arXiv", "newsroom": "Newsroom*"}
    for ds, name in names.items():
        for label, figs in rows:
            cite = f'{name} / {label} (Table 1, row "{label}", {name})'
            paper = M2M_TYPE[label] + figs[ds]
            if label.startswith("Lead"):
                lead = "lead3" if ds == "newsroom" else "leadk"
                how = ("baseline", f"{ds}/baselines.json", lead)
                if ds != "newsroom":  # Lead-10: the implicit extraction's Lead-10
                    how = ("extraction", f"{ds}/implicit_extraction.mem2mem_base/scores.json",
                           "lead-10")
                t.rows.append(Row(cite, paper, how, facts={"type": "E"}))
            elif label == "Mem2Mem":
                t.rows.append(Row(cite, paper, _m2m_run(ds, "mem2mem_base"), facts={"type": "A"}))
            else:
                t.rows.append(Row(cite, paper, None, NO_WEIGHTS))
        t.rows.append(Row(f"{name} / HRED (this project's baseline, Table 2's for PubMed)",
                          (None, None) + ((40.02, 15.82, 36.28) if ds == "pubmed" else (None,) * 3),
                          _m2m_run(ds, "hred_base"), facts={"type": "A"}))
    t.notes = ("# of params.: the paper's in millions as printed (TLM: GPT-2's); the run's is the "
               "floating-point parameters of its checkpoint_best.pt / 10^6.",)
    return t


def _m2m_run(ds, arch):
    """The run's figures of a Mem2Mem / HRED row: its test decoding's scores and its checkpoint's
    parameters (counted when the table is written)."""
    return ("rouge", f"{ds}/test.{arch}.beam4.out.rouge.json",
            {"checkpoint": f"{ds}/checkpoints/{arch}/checkpoint_best.pt"})


def mem2mem_t3():
    t = Table("mem2mem", "t3", "Mem2Mem Table 3: unsupervised extractive ROUGE-1/2/L F1",
              ROUGE, ROUGE_KEYS, paper_scorer=M2M_SCORER)
    figs = {"pubmed": ((37.45, 14.19, 34.07), (39.19, 13.89, 34.59), (41.77, 16.20, 37.81),
                       (47.76, 20.36, 39.19)),
            "arxiv": ((35.52, 10.33, 31.44), (33.85, 10.73, 28.99), (41.76, 14.95, 37.22),
                      (44.25, 18.17, 35.33))}
    for ds, name in (("pubmed", "PubMed"), ("arxiv", "arXiv")):
        lead, lex, mem, gold = figs[ds]
        ext = f"{ds}/implicit_extraction.mem2mem_base/scores.json"
        t.rows += [
            Row(f'{name} / Lead-10 (Table 3, row "{name} Lead-10")', lead,
                ("extraction", ext, "lead-10")),
            Row(f'{name} / LexRank (Table 3, row "{name} LexRank")', lex,
                ("rouge", f"{ds}/lexrank.rouge.json", None)),
            Row(f'{name} / Mem2Mem (Table 3, row "{name} Mem2Mem")', mem,
                ("extraction", ext, "memory")),
            Row(f'{name} / Gold Ext (Table 3, row "{name} Gold Ext"; here the greedy oracle)',
                gold, ("baseline", f"{ds}/baselines.json", "oracle"))]
    return t


def mem2mem_t4():
    t = Table("mem2mem", "t4", "Mem2Mem Table 4: % of summary n-grams found in the PubMed article",
              ("5", "10", "15", "20"), ("found_5", "found_10", "found_15", "found_20"))
    t.rows += [
        Row('Reference (Table 4, row "Reference")', (12.4, 3.2, 1.3, 0.9),
            ("rouge", "pubmed/test.mem2mem_base.beam4.out.novel.json", "ref")),
        Row('Baseline HRED (Table 4, row "Baseline HRED")', (38.1, 26.0, 17.4, 13.4),
            ("rouge", "pubmed/test.hred_base.beam4.out.novel.json", None)),
        Row('TLM-hybrid (Table 4, row "TLM-hybrid")', (24.7, 10.8, 7.0, 4.1), None, NO_WEIGHTS),
        Row('Mem2Mem (Table 4, row "Mem2Mem (ours)")', (28.3, 19.2, 17.6, 10.7),
            ("rouge", "pubmed/test.mem2mem_base.beam4.out.novel.json", None))]
    return t


# ----------------------------------------------------------------------------------- ETADS
ETADS_SYSTEMS = {  # name -> fairseq-train flags over etads_baseline (4 + 4 layers)
    "basic": "", "focus": "--focus-layers all", "saliency": "--saliency-layers all",
    "etads": "--focus-layers all --saliency-layers all",
    "enc2": "--encoder-layers 2", "enc6": "--encoder-layers 6",
    "dec2": "--decoder-layers 2", "dec6": "--decoder-layers 6",
    "sal12": "--saliency-layers 1,2", "sal34": "--saliency-layers 3,4",
    "foc12": "--focus-layers 1,2", "foc34": "--focus-layers 3,4",
}
ETADS_SCORER = ("the official ROUGE script (Table 2's caption), run through pyrouge with standard "
                "options (§4.1's footnote 3)")
ETADS_TABLE_SYSTEMS = {"t2": ("basic", "focus", "saliency", "etads"),
                       "t4": ("enc2", "basic", "enc6", "dec2", "dec6"),
                       "t5": ("basic", "sal12", "sal34", "saliency"),
                       "t6": ("basic", "foc12", "foc34", "focus")}


def _etads(system):
    return ("rouge", f"cnn_dm/test.etads_{system}.beam*.out.rouge.json",
            {"params": f"cnn_dm/etads_{system}.params.json"})


def etads_t2():
    t = Table("etads", "t2", "ETADS Table 2: ROUGE-1/2/L F1 on CNN/DM test", ROUGE, ROUGE_KEYS,
              paper_scorer=ETADS_SCORER)
    others = (("words-1vt2k-temp-att", (36.64, 15.66, 33.42)), ("PG+cov", (39.53, 17.28, 36.38)),
              ("ConvS2S", (39.75, 17.29, 36.54)), ("Explicit-Selection", (41.54, 18.18, 36.47)),
              ("ROUGESal+Ent", (40.43, 18.00, 37.10)), ("Bottom-Up", (41.22, 18.68, 38.34)))
    for label, fig in others:
        t.rows.append(Row(f'{label} (Table 2, row "{label}")', fig, None, NO_WEIGHTS))
    for label, fig, system in (("Basic model", (39.45, 17.20, 36.49), "basic"),
                               ("+Focus-Attention", (40.29, 18.63, 38.11), "focus"),
                               ("+Saliency-Selection", (40.76, 18.40, 37.67), "saliency"),
                               ("ETADS", (41.75, 19.01, 38.89), "etads")):
        t.rows.append(Row(f'{label} (Table 2, row "{label}")', fig, _etads(system)))
    t.rows.append(Row("Lead-3 (baseline, not in Table 2)", (None,) * 3,
                      ("baseline", "cnn_dm/baselines.json", "lead3")))
    return t


def etads_t4():
    t = Table("etads", "t4", "ETADS Table 4: ROUGE-1/2/L F1 and parameters by encoder / decoder "
              "depth (basic model)", ROUGE + ("# params (K)",), ROUGE_KEYS + ("params_k",),
              paper_scorer=ETADS_SCORER)
    for part, rows in (("Encoder", ((2, (35.12, 14.05, 32.41, 3190), "enc2"),
                                    (4, (39.45, 17.20, 36.49, 3821), "basic"),
                                    (6, (39.67, 17.47, 35.71, 4451), "enc6"))),
                       ("Decoder", ((2, (31.10, 12.93, 27.04, 3406), "dec2"),
                                    (4, (39.45, 17.20, 36.49, 4246), "basic"),
                                    (6, (39.35, 18.01, 36.21, 5087), "dec6")))):
        for layers, fig, system in rows:
            t.rows.append(Row(f'{part} {layers} layers (Table 4, row "{part} {layers} layers")',
                              fig, _etads(system)))
    t.notes = ("# params: the paper's counts (K) are far below a d 512 model's and are compared "
               "as printed; the run's count is the model's trainable parameters / 1000.",)
    return t


def _placements(table, kind, figures, systems, metric):
    cap = "precision" if metric == "precision" else "recall"
    t = Table("etads", table, f"ETADS Table {table[1]}: ROUGE-1/2/L {cap} by {kind} layers",
              ROUGE, tuple(f"{k}_{metric}" for k in ROUGE_KEYS), paper_scorer=ETADS_SCORER)
    for (label, fig), system in zip(figures, systems):
        t.rows.append(Row(f'{label} (Table {table[1]}, row "{label}")', fig, _etads(system)))
    return t


def etads_t5():
    return _placements("t5", "saliency-selection",
                       (("-", (40.87, 17.78, 37.73)), ("[1-2]", (42.81, 20.12, 39.68)),
                        ("[3-4]", (41.91, 19.65, 39.32)), ("[1-4]", (43.06, 20.85, 40.12))),
                       ETADS_TABLE_SYSTEMS["t5"], "precision")


def etads_t6():
    return _placements("t6", "focus-attention",
                       (("-", (41.10, 17.82, 37.91)), ("[1-2]", (40.92, 18.61, 38.22)),
                        ("[3-4]", (40.57, 18.20, 38.19)), ("[1-4]", (41.31, 18.72, 38.93))),
                       ETADS_TABLE_SYSTEMS["t6"], "recall")


# -------------------------------------------------------------------------- Topic Assistant
NO_PRETRAINED = ("BertSUM / UNILM / MASS weights are not available to this project (figure copied "
                 "from the paper)")
NYT_REASON = "NYT (LDC2008T19) is licensed: recipes/nyt/transformer_ta.sh needs its JSONL"


TA_SCORER = ("ROUGE, implementation not stated (Tables 2-4's figures cited from Liu and Lapata, "
             "2019; Table 5's from Zhang et al., 2019b, UNILM on XSum from its public code)")
TA_TABLE = {"cnn_dm": "Table 2", "xsum": "Table 3", "nyt": "Table 4"}
TA_PUBLISHED = {  # Tables 2-4's first group, cited there from Liu and Lapata (2019); DRM here is
    # Paulus et al.'s deep reinforced model, not the Topic Assistant's modulation
    "cnn_dm": (("PTGEN (See et al., 2017)", (36.44, 15.66, 33.42)),
               ("PTGEN+Cov (See et al., 2017)", (39.53, 17.28, 36.38)),
               ("DRM (Paulus et al., 2017)", (39.87, 15.82, 36.90)),
               ("BOTTOMUP (Gehrmann et al., 2018)", (41.22, 18.68, 38.34)),
               ("DCA (Celikyilmaz et al., 2018)", (41.69, 19.47, 37.92))),
    "xsum": (("PTGEN (See et al., 2017)", (29.70, 9.21, 23.24)),
             ("PTGEN+Cov (See et al., 2017)", (28.10, 8.02, 21.72)),
             ("TCONVS2S (Narayan et al., 2018)", (31.89, 11.54, 25.75))),
    "nyt": (("PTGEN (See et al., 2017)", (42.47, 25.61, None)),
            ("PTGEN+Cov (See et al., 2017)", (43.71, 26.40, None)),
            ("DRM (Paulus et al., 2017)", (42.94, 26.02, None))),
}


def ta_main():
    t = Table("ta", "main", "Topic Assistant Tables 2-5: ROUGE-1/2/L F1, base vs +TA (beam 5, "
              "length penalty tuned on validation, mean of the top-3 checkpoints)",
              ROUGE, ROUGE_KEYS, paper_scorer=TA_SCORER)
    paper = {"cnn_dm": {"Transformer": (40.21, 17.76, 37.09, "Table 2"),
                        "BertSUM": (42.13, 19.60, 39.18, "Table 2"),
                        "BertSUM+TA": (43.06, 20.58, 39.67, "Table 2"),
                        "MASS": (42.12, 19.50, 39.01, "Table 5"),
                        "MASS+TA": (43.06, 19.98, 39.88, "Table 5"),
                        "UNILM": (43.33, 20.21, 40.51, "Table 5"),
                        "UNILM+TA": (43.87, 20.78, 40.65, "Table 5"),
                        "BART": (44.16, 21.28, 40.90, "Table 5"),
                        "BART+TA": (44.47, 21.39, 41.32, "Table 5")},
             "xsum": {"Transformer": (29.41, 9.77, 23.01, "Table 3"),
                      "BertSUM": (38.81, 16.50, 31.27, "Table 3"),
                      "BertSUM+TA": (39.77, 17.39, 32.39, "Table 3"),
                      "MASS": (39.75, 17.24, 31.95, "Table 5"),
                      "MASS+TA": (41.12, 18.05, 32.75, "Table 5"),
                      "UNILM": (42.63, 19.10, 33.13, "Table 5"),
                      "UNILM+TA": (43.70, 20.01, 34.56, "Table 5"),
                      "BART": (45.14, 22.27, 37.25, "Table 5"),
                      "BART+TA": (45.76, 22.68, 38.03, "Table 5")},
             "nyt": {"Transformer": (35.75, 17.23, 31.41, "Table 4"),
                     "BertSUM": (49.02, 31.02, 45.55, "Table 4"),
                     "BertSUM+TA": (50.12, 32.08, 46.67, "Table 4")}}
    runs = {"Transformer": "transformer", "Transformer+TA": "transformer_ta",
            "BART": "bart", "BART+TA": "bart_ta"}
    names = {"cnn_dm": "CNN/DM", "xsum": "XSum", "nyt": "NYT"}
    for ds, rows in paper.items():
        for model, fig in TA_PUBLISHED[ds]:  # the first group of Tables 2-4 (LSTM or CNN models)
            short = model.split(" (")[0]
            t.rows.append(Row(f'{names[ds]} / {short} ({TA_TABLE[ds]}, row "{model}")', fig,
                              None, NO_WEIGHTS))
        order = ["Transformer", "Transformer+TA"] + [k for k in rows if k != "Transformer"]
        for model in order:
            fig = rows.get(model)
            cite = (f'{fig[3]}, row "{model}"' if fig else
                    "the paper reports no Transformer+TA figure")
            label = f"{names[ds]} / {model} ({cite})"
            values = fig[:3] if fig else (None,) * 3
            if ds == "nyt":
                t.rows.append(Row(label, values, None, NYT_REASON))
            elif model in runs:
                t.rows.append(Row(label, values, ("rouge", f"{ds}/{runs[model]}/test.mean.json",
                                                   None)))
            else:
                t.rows.append(Row(label, values, None, NO_PRETRAINED))
        if ds != "nyt":
            t.rows.append(Row(f"{names[ds]} / Lead-3 (baseline, not in the paper)", (None,) * 3,
                              ("baseline", f"{ds}/baselines.json", "lead3")))
    return t


def ta_ss():
    t = Table("ta", "ss", "Topic Assistant Table 6: mean semantic similarity (TA eq. 10) of the "
              "summary to the document and to the gold summary", ("Sum-Doc", "Sum-Gold"),
              ("ss_sum_doc", "ss_sum_gold"))
    paper = {"cnn_dm": ((0.622, 0.775), (0.651, 0.781)), "xsum": ((0.313, 0.727), (0.336, 0.757))}
    for ds, name in (("cnn_dm", "CNN/DM"), ("xsum", "XSum")):
        base, ta = paper[ds]
        t.rows += [Row(f'{name} / BertSUM (Table 6, row "{name} BertSUM")', base, None,
                       NO_PRETRAINED),
                   Row(f'{name} / BertSUM+TA (Table 6, row "{name} BerSUM+TA")', ta, None,
                       NO_PRETRAINED),
                   Row(f"{name} / Transformer (this project's base; no paper figure)",
                       (None, None), ("rouge", f"{ds}/transformer.ss.json", None)),
                   Row(f"{name} / Transformer+TA (this project; no paper figure)",
                       (None, None), ("rouge", f"{ds}/transformer_ta.ss.json", None))]
    return t


def ta_topics():
    t = Table("ta", "topics", "Topic Assistant §3 / Fig. 2: the topic model's topics (no paper "
              "figures: the words are the run's, written to topics.md)", ("topics",), ("k",))
    for ds, name in (("cnn_dm", "CNN/DM"), ("xsum", "XSum")):
        t.rows.append(Row(f"{name}: PFA topics fitted on the training documents (App. B: K = 256)",
                          (256,), ("topics", f"{ds}/topics.json", None)))
    return t


# ------------------------------------------------------------------- information selection
IS_SCORER = "ROUGE on 1k-document subsets (§4.3), implementation not stated"


def is_t2():
    t = Table("is", "t2", "Information selection Table 2: same vs different gates over "
              "thresholds (Newsroom test subset)", ("sparsity %",) + ROUGE,
              ("sparsity",) + ROUGE_KEYS, paper_scorer=IS_SCORER)
    same = ((0.0, 0.00, 40.13, 28.26, 36.09), (0.04, 33.18, 40.11, 28.17, 35.97),
            (0.08, 49.15, 40.02, 28.10, 35.85), (0.1, 58.20, 41.11, 28.96, 36.88),
            (0.2, 88.51, 36.65, 23.40, 32.77))
    diff = ((0.0, 0.00, 41.26, 29.26, 37.13), (0.04, 39.15, 40.47, 28.47, 36.42),
            (0.08, 52.16, 40.29, 28.26, 36.17), (0.1, 57.20, 40.50, 28.40, 36.41),
            (0.2, 75.76, 40.34, 28.30, 36.30))
    for model, name, rows in (("same gates", "same", same), ("diff gates", "diff", diff)):
        for threshold, *fig in rows:
            label = (f'{model} / threshold {threshold:g} (Table 2, row "T5-transformer using '
                     f'{model}", {threshold:g})')
            t.rows.append(Row(label, tuple(fig), ("gate", f"newsroom/gate_sweep.{name}/"
                                                  "gate_sweep.json", threshold)))
    return t


def _is_t3_name(lam):
    """The model of Table 3's lambda: lambda 0.1 is Table 2's same-gates model."""
    return "same" if lam == 0.1 else f"l{lam:g}"


def is_t3():
    t = Table("is", "t3", "Information selection Table 3: the gate penalty lambda (threshold 0.1, "
              "Newsroom dev)", ("sparsity %", "R-2"), ("sparsity", "rouge2"),
              paper_scorer=IS_SCORER)
    for lam, sparsity, r2 in ((0.0, 41.74, 24.05), (0.1, 57.61, 24.61), (0.2, 72.23, 23.35),
                              (0.4, 78.04, 21.70), (0.7, 80.52, 19.34)):
        t.rows.append(Row(f'lambda {lam:g} (Table 3, row "{lam:g}")', (sparsity, r2),
                          ("gate", f"newsroom/gate_sweep.{_is_t3_name(lam)}.valid/gate_sweep.json",
                           0.1)))
    return t


def is_sweep():
    t = Table("is", "sweep", "Information selection §4.4 / Fig. 4: thresholds 0 .. 0.2 (lambda "
              "0.1; the paper's figures are Table 2's same-gates rows)", ("sparsity %",) + ROUGE,
              ("sparsity",) + ROUGE_KEYS, paper_scorer=IS_SCORER)
    paper = {0.0: (0.0, 40.13, 28.26, 36.09), 0.04: (33.18, 40.11, 28.17, 35.97),
             0.08: (49.15, 40.02, 28.10, 35.85), 0.1: (58.20, 41.11, 28.96, 36.88),
             0.2: (88.51, 36.65, 23.40, 32.77)}
    # gate_sweep.py's default thresholds, 0 .. 0.2 by 0.02
    for threshold in (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2):
        cite = "Table 2, same gates" if threshold in paper else "Fig. 4 only"
        t.rows.append(Row(f"threshold {threshold:g} ({cite})",
                          paper.get(threshold, (None,) * 4),
                          ("gate", "newsroom/gate_sweep.same/gate_sweep.json", threshold)))
    return t


TABLES = {
    ("tpt", "t2"): tpt_t2, ("tpt", "t4"): tpt_t4, ("tpt", "roles"): tpt_roles,
    ("mem2mem", "t1"): mem2mem_t1, ("mem2mem", "t3"): mem2mem_t3, ("mem2mem", "t4"): mem2mem_t4,
    ("etads", "t2"): etads_t2, ("etads", "t4"): etads_t4, ("etads", "t5"): etads_t5,
    ("etads", "t6"): etads_t6,
    ("ta", "main"): ta_main, ("ta", "ss"): ta_ss, ("ta", "topics"): ta_topics,
    ("is", "t2"): is_t2, ("is", "t3"): is_t3, ("is", "sweep"): is_sweep,
}


TABLE_DATASETS = {
    ("tpt", "t2"): "xsum wikihow arxiv cnn_dm", ("tpt", "t4"): "xsum", ("tpt", "roles"): "xsum",
    ("mem2mem", "t1"): "pubmed arxiv newsroom", ("mem2mem", "t3"): "pubmed arxiv",
    ("mem2mem", "t4"): "pubmed", ("etads", "t2"): "cnn_dm", ("etads", "t4"): "cnn_dm",
    ("etads", "t5"): "cnn_dm", ("etads", "t6"): "cnn_dm", ("ta", "main"): "cnn_dm xsum nyt",
    ("ta", "ss"): "cnn_dm xsum", ("ta", "topics"): "cnn_dm xsum", ("is", "t2"): "newsroom",
    ("is", "t3"): "newsroom", ("is", "sweep"): "newsroom",
}


def _unknown(paper, table):
    known = ", ".join(f"{p} {t}" for p, t in TABLES)
    return ValueError(f"no table '{paper} {table}' (the tables: {known})")


# the paper-scale schedule of each paper's first model, for MEASURE's estimate: (arch, documents per
# update, updates, where the numbers come from)
PAPER_SCALE = {
    "tpt": ("t5_transformer_base", 128, 200000,
            "32 documents x 4 GPUs per update (App. B); 200,000 updates: the recipe's choice, the "
            "paper states none"),
    "mem2mem": ("mem2mem_base", 16, 112429,
                "16 documents per update and 15 epochs (App. A.2); the epochs counted over 119,924 "
                "training documents, the size of Cohan et al. (2018)'s PubMed training split (the "
                "recipe's count: the paper gives none)"),
    "etads": ("etads_base", 33, 200000,
              "batch size 4,096 on 4 GPUs and 200,000 steps (§4.1); the batch read as 4,096 "
              "tokens per GPU, ~33 documents of 400 + 100 tokens (the recipe's reading: the paper "
              "gives no unit)"),
    "ta": ("transformer_ta_base", 168, 250000,
           "200 summary tokens a batch (~7 XSum summaries) x 6 accumulated x 4 GPUs (App. B); "
           "250,000 updates"),
    "is": ("transformer_gated_base", 40, 100000,
           "the recipe's choices, the paper states no batch size and no number of updates: "
           "8,192 tokens x 4 batches per update, ~40 documents of 700 + 128 tokens; 100,000 "
           "updates"),
}


def measured_speed(log):
    """Seconds per update of a ``fairseq-train --log-interval 1`` log: the mean of 1 / ``ups`` over
    its per-update lines (``train_inner``) after the first (which pays the warm-up); None with
    fewer than two such lines."""
    ups = []
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            if "train_inner" in line:
                m = re.search(r"\bups=(\d+(?:\.\d+)?)", line)
                if m and float(m.group(1)) > 0:
                    ups.append(float(m.group(1)))
    if len(ups) < 2:
        return None
    return sum(1 / u for u in ups[1:]) / len(ups[1:])


def scale_lines(paper, log, batch, threads):
    """The header's paper-scale lines of a MEASURE run of ``batch`` documents a batch."""
    arch, docs, updates, source = PAPER_SCALE[paper]
    speed = measured_speed(log)
    if speed is None:
        return [f"Paper scale: {arch} not measured ({log} has fewer than two logged updates)."]
    per_doc = speed / batch
    hours = per_doc * docs * updates / 3600
    return [f"Paper scale, measured: {arch} at its paper dims, {batch} documents of this run's "
            "data a batch: "
            f"{speed:.2f} s/update on {threads} thread(s), {per_doc * threads:.3f} core-seconds "
            f"per document.",
            f"The paper's schedule ({source}) at that speed: {hours:,.0f} hours on "
            f"{threads} thread(s), {hours * threads:,.0f} core-hours per model (linear in the "
            "documents; GPUs are what the papers used)."]


def get_table(paper, table):
    if (paper, table) not in TABLES:
        raise _unknown(paper, table)
    return TABLES[paper, table]()


# ---------------------------------------------------------------------------- run's figures
def _load(path):
    """The JSON of ``path``; a file that is not JSON is a ``ValueError`` naming it."""
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not a JSON file ({e})") from None


def _points(value):
    return None if value is None else 100 * value


def _rouge_figure(data, key, side=None):
    if key.startswith("found_ref_") or (side == "ref" and key.startswith("found_")):
        ratio = data.get(f"novel_{key.rsplit('_', 1)[1]}gram_ref")
        return None if ratio is None else 100 * (1 - ratio)
    if key.startswith("found_"):
        ratio = data.get(f"novel_{key.split('_')[1]}gram_hyp")
        return None if ratio is None else 100 * (1 - ratio)
    if key.startswith("ss_"):
        return data.get(key)
    return _points(data.get(key))


def _params(extra, key):
    """``params_k`` (thousands) or ``params_m`` (millions) of a ``paper_tables params`` JSON."""
    k = extra.get("params_k")
    return None if k is None else k if key == "params_k" else k / 1000


def _with_facts(table, row, figures):
    return tuple(row.facts.get(k, v) for k, v in zip(table.keys, figures))


def smoke_runs(table, out):
    """The files of ``out`` that ``table`` shows (relative to ``out``) whose spec record says
    SMOKE=1 (fairseq_sum_plugins/cli/run_spec.py: the record of the file, else of its folder, else
    of the files beside it)."""
    from fairseq_sum_plugins.cli import run_spec

    shown = set()
    for row in table.rows:
        if row.source is not None:
            shown.update(p for p in glob.glob(os.path.join(glob.escape(out), row.source[1]))
                         if os.path.isfile(p))
    return [os.path.relpath(p, out) for p in run_spec.smoke_runs(sorted(shown))]


def run_figures(table, out, row):
    """The run's figures of ``row`` (a tuple, None where it has none), or a string saying why
    there are none."""
    if row.source is None:
        return f"not available here: {row.reason}"
    kind, rel, arg = row.source
    path = os.path.join(out, rel)
    if any(c in rel for c in "*?["):
        found = sorted(glob.glob(path))
        if len(found) > 1:
            return f"{len(found)} files match {rel}: remove the older"
        path = found[0] if found else path
    if not os.path.isfile(path):
        return f"not run ({rel} missing)"
    data = _load(path)
    if kind == "rouge":
        side = arg if isinstance(arg, str) else None
        extra = {}
        if isinstance(arg, dict) and os.path.isfile(os.path.join(out, arg.get("params", ""))):
            extra = _load(os.path.join(out, arg["params"]))
        elif isinstance(arg, dict) and os.path.isfile(os.path.join(out, arg.get("checkpoint", ""))):
            try:
                extra = parameter_count(os.path.join(out, arg["checkpoint"]))
            except ValueError as e:
                return str(e)
        return _with_facts(table, row, tuple(_params(extra, k) if k.startswith("params_") else
                                             _rouge_figure(data, k, side) for k in table.keys))
    if kind in ("baseline", "extraction"):
        system = (data["systems"] if kind == "baseline" else data["scores"]).get(arg)
        if system is None:
            return f"not computed ({rel} has no {arg})"
        return _with_facts(table, row, tuple(_points(system.get(k)) for k in table.keys))
    if kind == "gate":
        rows = [r for r in data if math.isclose(r["threshold"], arg, abs_tol=1e-9)]
        if not rows:
            return f"not run (threshold {arg:g} not in {rel})"
        return tuple(rows[0].get(k) for k in table.keys)
    if kind == "probe":
        return tuple(_points((data["cells"].get(f"{arg}/{k}") or {}).get("f1"))
                     for k in table.keys)
    if kind == "roles":
        return (_points(data["overall"]),)
    if kind == "topics":
        return (data["num_topics"],)
    raise ValueError(f"unknown source kind {kind}")


def mean_scores(scores, names=()):
    """The mean of fairseq-sum-score results (ROUGE F1s, precision, recall, METEOR), with the
    ``scorer`` and ``meteor_impl`` they record; results of different scorers (or METEOR
    implementations) are not averaged: ``ValueError`` naming them."""
    keys = [k for k in ROUGE_KEYS + tuple(f"{m}_{x}" for m in ROUGE_KEYS
                                          for x in ("precision", "recall")) + ("meteor",)
            if all(isinstance(s.get(k), (int, float)) for s in scores)]
    out = {k: sum(s[k] for s in scores) / len(scores) for k in keys}
    for field in ("scorer", "meteor_impl"):
        values = {s.get(field) for s in scores if s.get(field) is not None}
        if len(values) > 1:
            named = (", ".join(f"{n}: {s.get(field)}" for n, s in zip(names, scores)) if names
                     else ", ".join(sorted(values)))
            raise ValueError(f"the results were made by different {field}s ({named}): their "
                             "mean would be no scorer's figure")
        if values:
            out[field] = values.pop()
    out.update(averaged=len(scores), files=list(names))
    return out


def pick_lenpen(grid):
    """(alpha, record lines) of [(alpha, validation scores)]: the highest mean of ROUGE-1/2/L F1
    (the earlier alpha on a tie)."""
    lines, best, best_value = [], None, None
    for alpha, scores in grid:
        value = sum(scores[k] for k in ROUGE_KEYS) / 3
        lines.append(f"alpha {alpha}: mean ROUGE-1/2/L F1 {100 * value:.2f} on validation")
        if best is None or value > best_value:
            best, best_value = alpha, value
    return best, lines


def topic_words(data, n_topics=10, n_words=8):
    """{"num_topics": K, "topics": [{"k", "words"}, ...]}: the first ``n_topics`` topics of the
    topic model of ``data`` (a prepared bin folder) with their top words."""
    from fairseq_sum_plugins.features.topic_assistant.similarity import load_topic_model
    from fairseq_sum_plugins.features.topic_assistant.words import top_words

    dictionary, model = load_topic_model(data)
    k = model.phi.shape[1]
    return {"num_topics": k, "topics": [{"k": t, "words": top_words(model, dictionary, t, n_words)}
                                        for t in range(min(n_topics, k))]}


def parameter_count(checkpoint):
    """{"params_k": the model's parameters / 1000} of a fairseq checkpoint, loaded with
    ``weights_only=True`` (tensors and the classes compat allow-lists: a pickle that would run
    code is refused, with a ``ValueError`` naming the file)."""
    import torch

    from fairseq_sum_plugins.cli.safe_load import allow_fairseq_checkpoints  # torch's import, not fairseq's

    allow_fairseq_checkpoints()
    try:
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)["model"]
    except Exception as e:  # torch raises many kinds: unpickling, a zip error, a missing key
        first = (str(e).strip().splitlines() or [""])[0]
        raise ValueError(f"{checkpoint}: not a readable fairseq checkpoint "
                         f"({type(e).__name__}: {first})") from None
    return {"params_k": sum(v.numel() for v in state.values()
                            if v.is_floating_point()) / 1000, "checkpoint": checkpoint}


def throughput(folder):
    """Header lines of the seconds per update of each training under ``folder`` (its
    checkpoints/*/train.log: fairseq's last line with ``num_updates`` and ``wall``)."""
    lines = []
    for log in sorted(glob.glob(os.path.join(folder, "**", "train.log"), recursive=True)):
        last = None
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                u, w = re.search(r"\bnum_updates (\d+)", line), re.search(r"\bwall (\d+)", line)
                if u and w:
                    last = int(u.group(1)), int(w.group(1))
        if last and last[0] > 0:
            lines.append(f"- {os.path.relpath(os.path.dirname(log), folder)}: {last[0]} updates "
                         f"in {last[1]} s ({last[1] / last[0]:.2f} s/update, with validation)")
    return lines


def _write_json(path, data):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    os.replace(path + ".tmp", path)


def cells(table, values):
    """The cells of ``values`` (one per column of ``table``): "-" for None, a string as it is, a
    number at the column's digits."""
    digits = table.digits or (3 if table.keys[0].startswith("ss_") else 2,) * len(table.columns)
    return [("-" if v is None else v if isinstance(v, str) else f"{v:.{d}f}")
            for v, d in zip(values, digits)]


SCORER_NAMES = {"rouge155-py": "rouge155-py (this package's ROUGE-1.5.5 in Python)",
                "official": "official (ROUGE-1.5.5 itself)", "files2rouge": "files2rouge"}


def _recorded(data, field):
    """The values of ``field`` in a source file (a dict, or a list of gate-sweep rows)."""
    items = data if isinstance(data, list) else [data]
    return {str(d[field]) for d in items if isinstance(d, dict) and d.get(field) is not None}


def scorer_lines(table, out):
    """The lines naming what made the figures: the paper's scorer as the paper states it, and the
    ROUGE scorer (and METEOR implementation) recorded in each run file the table reads, with the
    files that record none."""
    scored = [k for k in table.keys if k.startswith(("rouge", "meteor"))]
    if not scored:
        return []
    lines = [f"The paper's figures: {table.paper_scorer or 'not stated'}."]
    found = {"scorer": {}, "meteor_impl": {}}
    silent = set()
    for row in table.rows:
        if row.source is None or row.source[0] not in ("rouge", "baseline", "extraction", "gate"):
            continue
        path = row.source[1]
        if any(c in path for c in "*?["):
            matches = sorted(glob.glob(os.path.join(out, path)))
            path = os.path.relpath(matches[0], out) if len(matches) == 1 else path
        full = os.path.join(out, path)
        if not os.path.isfile(full):
            continue
        data = _load(full)
        names = _recorded(data, "scorer")
        for name in names:
            found["scorer"].setdefault(name, set()).add(path)
        if not names:
            silent.add(path)
        if "meteor" in table.keys:
            for impl in _recorded(data, "meteor_impl"):
                found["meteor_impl"].setdefault(impl, set()).add(path)
    if not found["scorer"] and not silent:
        return lines + ["The run's figures: none read yet."]
    parts = [f"{SCORER_NAMES.get(name, name)} in {len(paths)} file(s)"
             for name, paths in sorted(found["scorer"].items())]
    if silent:
        parts.append(f"not recorded in {len(silent)} file(s) ({', '.join(sorted(silent))})")
    lines.append(f"The run's ROUGE: {'; '.join(parts)}.")
    if "meteor" in table.keys:
        impls = [f"{impl} in {len(paths)} file(s)"
                 for impl, paths in sorted(found["meteor_impl"].items())]
        lines.append(f"The run's METEOR: {'; '.join(impls) or 'none recorded'}.")
    return lines


def render(table, out, header=()):
    """The table as markdown: every row with the paper's figures and the run's beside them, and
    under the title what made them (:func:`scorer_lines`) and the ``header`` lines."""
    header = scorer_lines(table, out) + list(header)
    lines = [f"# {table.title}", ""] + [f"{h}" for h in header] + (["" ] if header else [])
    cols = " | ".join(f"{c} paper | {c} run" for c in table.columns)
    lines += [f"| row | {cols} | note |", "|---" * (1 + 2 * len(table.columns)) + "|---|"]
    for row in table.rows:
        run = run_figures(table, out, row)
        paper = cells(table, row.paper)
        note = ""
        if isinstance(run, str):
            run, note = ["n/a"] * len(table.columns), run
        else:
            run = cells(table, run)
        pairs = " | ".join(f"{p} | {r}" for p, r in zip(paper, run))
        lines.append(f"| {row.label} | {pairs} | {note} |")
    lines += [""] + [f"Note: {n}" for n in table.notes]
    probes = sorted({row.source[1] for row in table.rows if row.source and row.source[0] == "probe"
                     and os.path.isfile(os.path.join(out, row.source[1]))})
    if probes:  # Table 4 evaluates on each model's own dev summaries (App. C): which set each used
        lines += ["", "Probes (fairseq-sum-probe): trained on / evaluated on", ""]
        for path in probes:
            record = _load(os.path.join(out, path))
            lines.append(f"- {path}: the {record.get('trained_on', '?')} summaries / "
                         f"{record.get('evaluated_on', 'not recorded')}")
    for row in table.rows:
        if row.source and row.source[0] == "topics":
            for path in sorted(glob.glob(os.path.join(out, row.source[1]))):
                lines += ["", f"## Topics of {os.path.relpath(path, out)} (top words, relevance "
                          "lambda 0.6)", ""]
                lines += [f"- topic {t['k']}: {' '.join(t['words'])}"
                          for t in _load(path)["topics"]]
    return "\n".join(lines).rstrip() + "\n"


def reads_and_writes(args):
    """``(reads, writes)`` of a subcommand for the output guard (``[(argument, path)]`` each; the
    train.log files under ``--train-logs``, as OUT itself holds them and the table)."""
    cmd = args.cmd
    if cmd == "write":
        logs = args.train_logs and glob.glob(os.path.join(args.train_logs, "**", "train.log"),
                                             recursive=True)
        return ([("--measure", args.measure and args.measure[0]), ("--train-logs", logs)],
                [("OUT", os.path.join(args.out, f"{args.paper}-{args.table}.md"))])
    if cmd == "mean":
        return [("SCORES", args.scores)], [("DEST", args.dest)]
    if cmd == "pick-lenpen":
        return ([("ALPHA=JSON", [s.split("=", 1)[-1] for s in args.scores])],
                [("RECORD", args.record)])
    if cmd == "params":
        return [("CHECKPOINT", args.pairs[0::2])], [("DEST", args.pairs[1::2])]
    if cmd == "topic-words":
        return [("DATA", args.data)], [("DEST", args.dest)]
    return [], []


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ledger.paper_tables", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    papers = ", ".join(dict.fromkeys(paper for paper, _ in TABLES))
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write OUT/PAPER-TABLE.md: the paper's figures beside the "
                       "run's")
    w.add_argument("paper", help=f"the paper: {papers} (subcommand list: the tables)")
    w.add_argument("table", help="the paper's table, e.g. t2 (subcommand list: the tables)")
    w.add_argument("out", help="the table command's output folder")
    w.add_argument("--header", action="append", default=[],
                   help="a line for the table's header (scale, throughput); repeatable")
    w.add_argument("--measure", nargs=3, metavar=("LOG", "BATCH", "THREADS"),
                   help="a MEASURE training log of BATCH documents a batch on THREADS threads")
    w.add_argument("--train-logs", metavar="DIR",
                   help="add the seconds per update of each train.log under DIR to the header")
    sub.add_parser("list", help="the tables, one 'PAPER TABLE' a line")
    m = sub.add_parser("mean", help="the mean of fairseq-sum-score --json files, as one such file")
    m.add_argument("dest", help="the JSON file to write: the mean of each figure every file "
                   "has (ROUGE F1, precision, recall, METEOR), with their scorer")
    m.add_argument("scores", nargs="+",
                   help="fairseq-sum-score --json files, all of one scorer (and METEOR "
                        "implementation)")
    k = sub.add_parser("pick-lenpen", help="the alpha whose validation ROUGE-1/2/L mean is highest")
    k.add_argument("record", help="the grid and the choice are written here")
    k.add_argument("scores", nargs="+", metavar="ALPHA=JSON",
                   help="a length penalty alpha and the fairseq-sum-score --json of its "
                        "validation decoding; the earlier alpha wins a tie")
    ms = sub.add_parser("scale-arch", help="the paper-dims arch whose speed MEASURE measures")
    ms.add_argument("paper", help=f"the paper: {', '.join(PAPER_SCALE)}")
    d = sub.add_parser("datasets", help="the datasets of a table, space-separated")
    d.add_argument("paper", help=f"the paper: {papers}")
    d.add_argument("table", help="the paper's table (subcommand list: the tables)")
    e = sub.add_parser("etads-systems", help="'NAME FLAGS' of the ETADS models of a table")
    e.add_argument("table", help=f"the ETADS table: {', '.join(ETADS_TABLE_SYSTEMS)}")
    c = sub.add_parser("params", help="each checkpoint's parameter count as JSON (one process "
                       "for all of a table's checkpoints)")
    c.add_argument("pairs", nargs="+", metavar="CHECKPOINT DEST",
                   help="a fairseq checkpoint (.pt), loaded with weights_only, and the JSON file "
                   "to write: params_k, the floating-point parameters / 1000, and the checkpoint's "
                   "path; as many pairs as given, every checkpoint read before any file is written")
    t = sub.add_parser("topic-words", help="the topic model's topics and top words as JSON")
    t.add_argument("data", help="a prepared DATA/bin folder with its dictionary and "
                   "topic_model.npz")
    t.add_argument("dest", help="the JSON file to write: num_topics (K of the model) and the "
                   "topics listed with their top words")
    t.add_argument("--topics", type=int, default=10,
                   help="how many topics to list, the model's first ones, at least 1 "
                        "(default: %(default)s)")
    t.add_argument("--words", type=int, default=8,
                   help="top words of each listed topic, by relevance (lambda 0.6), at least 1 "
                        "(default: %(default)s)")
    args = p.parse_args(argv)
    refuse_clobber(p, *reads_and_writes(args), files=True)
    if args.cmd == "scale-arch":
        if args.paper not in PAPER_SCALE:
            p.error(f"no paper {args.paper} ({' '.join(PAPER_SCALE)})")
        print(PAPER_SCALE[args.paper][0])
        return 0
    if args.cmd == "datasets":
        if (args.paper, args.table) not in TABLE_DATASETS:
            p.error(str(_unknown(args.paper, args.table)))
        print(TABLE_DATASETS[args.paper, args.table])
        return 0
    if args.cmd == "etads-systems":
        if args.table not in ETADS_TABLE_SYSTEMS:
            p.error(f"no ETADS table {args.table} ({' '.join(ETADS_TABLE_SYSTEMS)})")
        systems = ETADS_TABLE_SYSTEMS[args.table]
        print("\n".join(f"{n} {ETADS_SYSTEMS[n]}".rstrip() for n in systems))
        return 0
    if args.cmd == "params":
        if len(args.pairs) % 2:
            p.error(f"params takes CHECKPOINT DEST pairs, got {len(args.pairs)} arguments "
                    f"(the last, {args.pairs[-1]}, has no pair)")
        try:  # all counted first: a bad checkpoint leaves no file of the batch written
            counts = [parameter_count(ckpt) for ckpt in args.pairs[0::2]]
        except ValueError as e:
            p.error(str(e))
        for dest, count in zip(args.pairs[1::2], counts):
            _write_json(dest, count)
        return 0
    if args.cmd == "topic-words":
        if args.topics < 1 or args.words < 1:
            p.error("--topics and --words must be >= 1")
        _write_json(args.dest, topic_words(args.data, args.topics, args.words))
        return 0
    if args.cmd == "list":
        print("\n".join(f"{a} {b}" for a, b in TABLES))
        return 0
    if args.cmd == "mean":
        try:
            _write_json(args.dest, mean_scores([_load(f) for f in args.scores], args.scores))
        except ValueError as e:
            p.error(str(e))
        return 0
    if args.cmd == "pick-lenpen":
        try:
            grid = [(a, _load(f)) for a, f in (item.split("=", 1) for item in args.scores)]
        except ValueError:
            p.error("pick-lenpen takes ALPHA=JSON pairs")
        best, lines = pick_lenpen(grid)
        with open(args.record, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + f"\nchosen: {best}\n")
        print(best)
        return 0
    try:
        table = get_table(args.paper, args.table)
    except ValueError as e:
        p.error(str(e))
    if not os.path.isdir(args.out):
        p.error(f"{args.out}: not a folder")
    header = list(args.header)
    if args.train_logs:
        measured = throughput(args.train_logs)
        if measured:
            header += [f"Measured here ({os.cpu_count()} CPU cores visible, OMP_NUM_THREADS="
                       f"{os.environ.get('OMP_NUM_THREADS', 'unset')}):"] + measured
    if args.measure:
        header += scale_lines(args.paper, args.measure[0], int(args.measure[1]),
                              int(args.measure[2]))
    smoke = smoke_runs(table, args.out)
    if smoke and not any(h.startswith("SMOKE=1") for h in header):
        header.insert(0, f"SMOKE=1: {len(smoke)} of the runs shown were made under SMOKE=1 (their "
                      f"spec records: {', '.join(smoke[:3])}{' ...' if len(smoke) > 3 else ''}): "
                      "the run's figures check the pipeline, not the paper.")
    try:
        text = render(table, args.out, header)
    except ValueError as e:
        p.error(str(e))
    dest = os.path.join(args.out, f"{args.paper}-{args.table}.md")
    with open(dest + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(dest + ".tmp", dest)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
