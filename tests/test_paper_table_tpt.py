"""recipes/papers.sh tpt at smoke scale: TP-Transformer Table 2 (XSum, dev and test, beam 1 and 4, with
the paper-scale speed measured), Table 4 (probes) and §4.4 (roles)."""
import os
import re
import subprocess
import sys

import pytest

from paper_smoke import check_table, papers_sh, table_rows


@pytest.mark.slow
def test_tpt_table2_on_xsum_at_smoke_scale(raw_corpora, papers_out):
    text = papers_sh(papers_out("tpt"), "tpt", "t2", f"xsum={raw_corpora['xsum']}", MEASURE="3",
                     MEASURE_BATCH="2")
    # the paper-dims model measured for the header's paper-scale estimate
    assert re.search(r"Paper scale, measured: t5_transformer_base at its paper dims, 2 documents .* "
                     r"\d+\.\d\d s/update on 1 thread", text)
    assert "core-hours per model" in text
    rows = check_table(text, "tpt", "t2", [f"XSum / {s} / beam {b} / {m}" for s in ("Dev", "Test")
                                           for b in (1, 4) for m in ("Transformer", "TPT-c", "TPT-d")]
                       + [("XSum / Test / Lead-3", 3)])
    (cnn,) = [cells for label, cells in rows.items() if label.startswith("CNN/DM / Test / beam 4 / TPT-d")]
    assert "not run (cnn_dm/" in cnn[-1]


def _probe_labels(out, folder):
    """pos / dep / nel .conllu over the training summaries' words (--write-words), labelled by a
    rule (a stand-in for a tagger: the probe's input format is what is tested here)."""
    import torch  # noqa: F401  (fairseq-sum-probe's import cost is paid once here)

    words = folder / "words.txt"
    ckpt = os.path.join(out, "xsum", "checkpoints", "tp_transformer", "checkpoint_best.pt")
    subprocess.run(["fairseq-sum-probe", os.path.join(out, "xsum", "bin"), "--path", ckpt, "--split", "train",
                    "--write-words", str(words)], check=True, capture_output=True,
                   env={**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]})

    def label(w):
        return "NUM" if any(c.isdigit() for c in w) else "PUNCT" if not w.isalnum() else \
            "LONG" if len(w) > 4 else "SHORT"

    for task in ("pos", "dep", "nel"):
        with open(words, encoding="utf-8") as f, open(folder / f"{task}.conllu", "w", encoding="utf-8") as out_f:
            for n, line in enumerate(f):
                out_f.write(f"# sent_id = {n}\n")
                ws = line.split()
                for i, w in enumerate(ws):
                    misc = (f"NER={'B' if i == 1 else 'I'}-{label(ws[1])}" if i else "NER=O") if task == "nel" else "_"
                    out_f.write(f"{i + 1}\t{w}\t_\tX\t{label(w)}\t_\t{0 if i == 0 else 1}\t{label(w)}\t_\t{misc}\n")
                out_f.write("\n")
    return str(folder)


@pytest.mark.slow
def test_tpt_table4_probes_and_role_analysis_at_smoke_scale(raw_corpora, papers_out, tmp_path):
    out = papers_out("tpt")
    papers_sh(out, "tpt", "roles", raw_corpora["xsum"])  # trains the XSum models unless Table 2 did
    labels = _probe_labels(out, tmp_path)
    text = papers_sh(out, "tpt", "t4", raw_corpora["xsum"], PROBE_LABELS=labels, PROBE_EXTRA="--epochs 3")
    rows = table_rows(text)
    for task in ("POS", "DEP", "NEL"):
        for layer in range(1, 3):  # SMOKE's models have 1 layer... the rows of deeper layers say so
            tptd = rows[f'{task} / layer {layer} / TPT-d (Table 4, row "{task} {layer}", TPT-d)']
            base = rows[f'{task} / layer {layer} / Transformer (Table 4, row "{task} {layer}", Transformer)']
            if layer == 1:
                assert all(re.fullmatch(r"\d+\.\d+", c) for c in tptd[1:6:2]), tptd
                assert base[1] == "-" and re.fullmatch(r"\d+\.\d+", base[3]) and base[3] == base[5]
    assert "SRL tagger" in rows['SRL / layer 1 / TPT-d (Table 4, row "SRL 1", TPT-d)'][-1]
    roles = table_rows(open(os.path.join(out, "tpt-roles.md"), encoding="utf-8").read())
    (cells,) = roles.values()
    assert cells[0] == "90.00" and 0 <= float(cells[1]) <= 100
