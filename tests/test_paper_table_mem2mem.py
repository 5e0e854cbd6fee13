"""recipes/papers.sh mem2mem at smoke scale: Mem2Mem Tables 1, 3 (Lead-10, LexRank, the memory's
implicit extraction) and 4 (copied n-grams) on PubMed-shaped data."""
import json
import os

import pytest

from paper_smoke import check_table, papers_sh


@pytest.mark.slow
def test_mem2mem_tables_1_3_4_on_pubmed_at_smoke_scale(raw_corpora, papers_out):
    out = papers_out("mem2mem")
    text = papers_sh(out, "mem2mem", "t3", f"pubmed={raw_corpora['pubmed']}")
    check_table(text, "mem2mem", "t3", ["PubMed / Lead-10", "PubMed / LexRank", "PubMed / Mem2Mem",
                                        "PubMed / Gold Ext"])
    text = papers_sh(out, "mem2mem", "t4", raw_corpora["pubmed"])
    rows = check_table(text, "mem2mem", "t4", ["Reference"])
    assert "not available here" in rows['TLM-hybrid (Table 4, row "TLM-hybrid")'][-1]
    for name in ("hred_base", "mem2mem_base"):  # 3-update models' summaries may have no 5-gram: "-"
        novel = json.load(open(os.path.join(out, "pubmed", f"test.{name}.beam4.out.novel.json")))
        assert all(f"novel_{n}gram_hyp" in novel for n in (5, 10, 15, 20))
    for label in ('Baseline HRED (Table 4, row "Baseline HRED")', 'Mem2Mem (Table 4, row "Mem2Mem (ours)")'):
        assert rows[label][-1] == ""  # read from its file, not "not run"
    text = papers_sh(out, "mem2mem", "t1", f"pubmed={raw_corpora['pubmed']}")
    # Lead-10 has no parameters ("-" in the paper and the run); Mem2Mem's and HRED's are counted
    # from their checkpoints
    rows = check_table(text, "mem2mem", "t1", [("PubMed / Lead-10", ("type", "rouge1", "rouge2", "rougeL")),
                                               "PubMed / Mem2Mem", "PubMed / HRED"])
    assert rows['PubMed / Lead-10 / 3 (Newsroom) (Table 1, row "Lead-10 / 3 (Newsroom)", PubMed)'][3] == "-"
    assert "not run (arxiv/" in rows['arXiv / Mem2Mem (Table 1, row "Mem2Mem", arXiv)'][-1]
    assert "does not implement" in rows['PubMed / Sent-PTR (Table 1, row "Sent-PTR", PubMed)'][-1]
    # the scorer of the run's figures (SMOKE: rouge155-py), as the score files record it
    assert "The run's ROUGE: rouge155-py (this package's ROUGE-1.5.5 in Python) in " in text
