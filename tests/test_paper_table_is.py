"""recipes/papers.sh is at smoke scale: information selection Table 2 (shared and per-head gates), the
threshold sweep and Table 3 (lambda) on Newsroom-shaped data."""
import pytest

from paper_smoke import check_table, papers_sh


@pytest.mark.slow
def test_information_selection_tables_at_smoke_scale(raw_corpora, papers_out):
    out = papers_out("is")
    text = papers_sh(out, "is", "t2", f"newsroom={raw_corpora['newsroom']}")
    check_table(text, "is", "t2", [f"{g} / threshold {t}" for g in ("same gates", "diff gates")
                                   for t in ("0 ", "0.04", "0.08", "0.1 ", "0.2")])
    text = papers_sh(out, "is", "sweep", raw_corpora["newsroom"])
    check_table(text, "is", "sweep", ["threshold 0.1 ", "threshold 0.12", "threshold 0.2 "])
    text = papers_sh(out, "is", "t3", raw_corpora["newsroom"])
    check_table(text, "is", "t3", [f"lambda {x} " for x in ("0", "0.1", "0.2", "0.4", "0.7")])
