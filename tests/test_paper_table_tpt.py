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
    assert re.search(r"The run's METEOR: nltk-[\d.]+ in 12 file\(s\)\.", text)  # papers_sh's METEOR=nltk


def _label(w):
    return "NUM" if any(c.isdigit() for c in w) else "PUNCT" if not w.isalnum() else \
        "LONG" if len(w) > 4 else "SHORT"


def _write_labels(words, path, task):
    """CoNLL-U of ``words`` (--write-words' lines) labelled by a rule (a stand-in for a tagger:
    the probe's input format is what is tested here)."""
    with open(words, encoding="utf-8") as f, open(path, "w", encoding="utf-8") as out_f:
        for n, line in enumerate(f):
            out_f.write(f"# sent_id = {n}\n")
            ws = line.split()
            for i, w in enumerate(ws):
                # NEL: each sentence one entity typed by its first word (a one-word sentence too:
                # a 3-update model's own summaries are short)
                misc = f"NER={'B' if i == 0 else 'I'}-{_label(ws[0])}" if task == "nel" else "_"
                out_f.write(f"{i + 1}\t{w}\t_\tX\t{_label(w)}\t_\t{0 if i == 0 else 1}\t{_label(w)}\t_\t{misc}\n")
            out_f.write("\n")


def _probe_labels(out, folder):
    """pos / dep / nel .conllu over the training summaries' words, and TASK.valid.tp_transformer
    .conllu over TPT-d's own dev summaries (its Table 2 decoding), none for the Transformer's: its
    probes fall back to held-out training references."""
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    data = os.path.join(out, "xsum", "bin")
    ckpt = os.path.join(out, "xsum", "checkpoints", "tp_transformer", "checkpoint_best.pt")
    words, own = folder / "words.txt", folder / "own.txt"
    subprocess.run(["fairseq-sum-probe", data, "--path", ckpt, "--split", "train", "--write-words", str(words)],
                   check=True, capture_output=True, env=env)
    subprocess.run(["fairseq-sum-probe", data, "--path", ckpt, "--eval-split", "valid", "--eval-generate-output",
                    os.path.join(out, "xsum", "valid.tp_transformer.beam4.out"), "--write-words", str(own)],
                   check=True, capture_output=True, env=env)
    for task in ("pos", "dep", "nel"):
        _write_labels(words, folder / f"{task}.conllu", task)
        _write_labels(own, folder / f"{task}.valid.tp_transformer.conllu", task)
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
    for task in ("pos", "dep", "nel"):  # App. C's evaluation set where its labels were given
        assert (f"- xsum/probe.{task}.tp_transformer.json: the train summaries / the model's own valid "
                "summaries (valid.tp_transformer.beam4.out)") in text
        assert f"- xsum/probe.{task}.t5_transformer.json: the train summaries / 0.2 of the train summaries, held out" in text
    roles = table_rows(open(os.path.join(out, "tpt-roles.md"), encoding="utf-8").read())
    (cells,) = roles.values()
    assert cells[0] == "more than 90" and 0 <= float(cells[1]) <= 100
