"""recipes/papers.sh etads at smoke scale: ETADS Tables 2 (with the single-extension rows), 4 (layers),
5 (saliency placement) and 6 (focus placement) on CNN/DM-shaped data."""
import pytest

from paper_smoke import check_table, papers_sh


@pytest.mark.slow
def test_etads_tables_2_4_5_6_at_smoke_scale(raw_corpora, papers_out):
    out = papers_out("etads")
    text = papers_sh(out, "etads", "t2", f"cnn_dm={raw_corpora['cnn_dm']}")
    check_table(text, "etads", "t2", ["Basic model", "+Focus-Attention", "+Saliency-Selection", "ETADS",
                                      "Lead-3"])
    # SMOKE scores with rouge155-py: the table says so, not "official ROUGE"
    assert "The run's ROUGE: rouge155-py (this package's ROUGE-1.5.5 in Python) in 5 file(s)." in text
    text = papers_sh(out, "etads", "t5", raw_corpora["cnn_dm"])  # 2 more models: [1-2], [3-4]
    check_table(text, "etads", "t5", ["-", "[1-2]", "[3-4]", "[1-4]"])
    text = papers_sh(out, "etads", "t6", raw_corpora["cnn_dm"])  # 2 more: focus on [1-2], [3-4]
    check_table(text, "etads", "t6", ["-", "[1-2]", "[3-4]", "[1-4]"])
    text = papers_sh(out, "etads", "t4", raw_corpora["cnn_dm"])  # 4 more: 2 and 6 layers each side
    rows = check_table(text, "etads", "t4", ["Encoder", "Decoder"])
    params = {label.split(" (")[0]: float(cells[7]) for label, cells in rows.items()}
    # the run's parameter counts grow with the layers, as the paper's: 2 < 4 (the basic model) < 6
    for side in ("Encoder", "Decoder"):
        assert params[f"{side} 2 layers"] < params[f"{side} 4 layers"] < params[f"{side} 6 layers"]
    assert params["Encoder 4 layers"] == params["Decoder 4 layers"]  # one model, both rows
