"""fairseq-sum-compare --html: one self-contained page a reviewer reads by eye (no network
resource)."""
import json
import os
import re
import shutil
import subprocess

import pytest

from fairseq_sum_plugins.evaluation import compare as C
from fairseq_sum_plugins.evaluation import compare_report as R
from tolerances import approx64

REFS = ["The council approved the new budget on Monday .",
        "Rain fell on the city for a whole week .",
        "A dog barked at the postman all day long ."]
SOURCES = ["On Monday the council approved the new budget after a long debate . <sep> "
           "Critics were unhappy .",
           "Rain fell on the city for a whole week . <sep> Rivers rose .",
           "A dog barked at the postman all day long . <sep> The postman & his bag left <early> . "
           '<sep> <img src="http://example.com/x.png"> </script>']
COPY = ["the council approved the new budget .", "rain fell on the city for a whole week .",
        "a dog barked at the postman ."]
GENERIC = ["officials said on monday .", "officials said on monday .", "officials said on monday ."]


def _files(tmp_path):
    paths = {}
    for name, lines in (("refs", REFS), ("src", SOURCES), ("copy", COPY), ("generic", GENERIC)):
        folder = tmp_path / name
        folder.mkdir()
        paths[name] = folder / "lines.txt"
        paths[name].write_text("\n".join(lines) + "\n")
    from fairseq_sum_plugins.evaluation.decodings import sha256_file

    use = {"gain": 0.9, "distinct": 3, "hypotheses": 3, "nll_own": 5.0,
           "generate_output_sha256": sha256_file(paths["copy"])}
    json.dump(use, open(tmp_path / "copy" / "source_use.json", "w"))
    return paths


def test_copied_words_are_the_words_of_shared_trigrams():
    words = "On Monday , the council approved it".split()
    assert R.copied_words(words, "the council approved".split()) == {3, 4, 5}
    # punctuation between copied words is marked with them; two words shared are not a trigram
    marked = R.copied_words("the , council approved".split(), "the council approved".split())
    assert marked == {0, 1, 2, 3}
    assert R.copied_words(words, "the council".split()) == set()


def test_specificity_rows_average_to_the_delta_by_hand():
    # M = [[100, 0], [0, 50]] (ROUGE-2 F1 x 100): rows 100 - 0 and 50 - 0, delta 75
    hyp = [["a b c"], ["d e f g"]]
    ref = [["a b c"], ["d e x y"]]
    rows = R.specificity_rows(hyp, ref)
    # "d e f g" vs "d e x y": 1 of 3 bigrams shared, F1 1/3
    assert list(rows) == approx64([100.0, 100 / 3])


def external_references(page):
    """Every resource the page would load: the src / href / srcset / action / data attributes of its
    tags, url( and @import in its style sheets and style attributes, except #anchors and data:
    URIs (text inside the page, escaped, is not a tag and not counted)."""
    from html.parser import HTMLParser

    found = []

    def css(text):
        found.extend(re.findall(r"""url\(\s*["']?([^"')]+)""", text, re.I))
        found.extend(re.findall(r"""@import\s+["']?([^"';]+)""", text, re.I))

    class Scan(HTMLParser):
        in_style = False

        def handle_starttag(self, tag, attrs):
            for name, value in attrs:
                if name in ("src", "href", "srcset", "action", "data", "poster") and value:
                    found.append(value)
                if name == "style" and value:
                    css(value)
            self.in_style = tag == "style"

        def handle_endtag(self, tag):
            self.in_style = False

        def handle_data(self, data):
            if self.in_style:
                css(data)

    Scan().feed(page)
    return [u for u in found if not (u.startswith("#") or u.startswith("data:"))]


def test_the_resource_scan_finds_what_a_page_would_load():
    page = ('<html><head><link rel="stylesheet" href="https://cdn/x.css"><style>b{background:'
            'url(http://x/y.png)}</style></head><body><img src="//x/z.png">'
            '&lt;img src="http://no"&gt;<a href="#doc1">a</a></body></html>')
    assert external_references(page) == ["https://cdn/x.css", "http://x/y.png", "//x/z.png"]


def test_the_page_shows_every_system_and_loads_nothing(tmp_path):
    p = _files(tmp_path)
    html = tmp_path / "report.html"
    C.main([str(p["copy"]), str(p["generic"]), "--ref", str(p["refs"]), "--src", str(p["src"]),
            "--names", "copy,generic", "--html", str(html), "--bootstrap-samples", "100"])
    page = html.read_text()
    assert external_references(page) == []
    assert "<script src" not in page and "<link" not in page
    for text in ("document 0", "document 2", "copy", "generic", "reference",
                 "specificity contribution", "largest ROUGE-2 spread between systems",
                 "The postman &amp; his bag left &lt;early&gt;",
                 "&lt;img src=&quot;http://example.com/x.png&quot;&gt; &lt;/script&gt;"):
        assert text in page, text
    # the copied words of the source carry the copying system's class (c0), not the generic one's
    assert '<span class="c0">approved</span>' in page
    assert "c1" not in re.sub(r"\.c1|c1\{", "", page.split("<body")[1])
    # the generic summary: one output for three documents, specificity 0 and p 1
    # by hand: "on monday" is its one bigram of 3 in reference 0's 7: F1 20 there, 0 elsewhere;
    # contributions 20 - 0, 0 - 10, 0 - 10 (mean 0); 8 of 27 resamples hold only the last two,
    # so the 5th percentile of the resampled means is -10
    assert "1/3" in page and "+0.00 [&ge; -10.00] (1.0000)" in page
    assert "0.900" in page  # the copy system's source gain from its source_use.json


def test_a_page_with_baselines_shows_their_rows_and_the_verdicts(tmp_path):
    p = _files(tmp_path)
    base = {"systems": {"lead3": {"rouge1": 0.3, "rouge2": 0.1, "rougeL": 0.25, "distinct": 3,
                                  "specificity": {"own": 10, "other": 2, "delta": 8.0, "p": 0.001},
                                  "verdict": {"label": "summarizes", "summarizes": True}},
                        "leadk": None},
            "bag_of_pieces": {"nll": 6.0}, "random_delta": 4.0, "bar": 2.0, "documents": 3}
    json.dump(base, open(tmp_path / "b.json", "w"))
    html = tmp_path / "r.html"
    C.main([str(p["copy"]), str(p["generic"]), "--ref", str(p["refs"]), "--src", str(p["src"]),
            "--baselines", str(tmp_path / "b.json"), "--html", str(html),
            "--bootstrap-samples", "100"])
    page = html.read_text()
    assert "baseline: lead3" in page and "leadk" not in page and "+8.00 (0.0010)" in page
    # a label of a file written before the rename is shown by its new name
    assert ">specific to its document</span>" in page and "summarizes" not in page
    assert 'class="no"' in page  # the generic summary is not specific to its documents
    assert "the bag of pieces' 6.000 bits" in page
    # no extract beside the JSON: the page says the test against Lead-3 was not measured, and why
    assert "Against Lead-3: not measured (no lead3.txt beside --baselines" in page


@pytest.mark.parametrize("extra, message", [
    (["--names", "a"], "2 distinct, non-empty names"),
    (["--names", "a,a"], "2 distinct, non-empty names"),
    (["--src", "nowhere.txt"], "--src nowhere.txt: no such file"),
])
def test_bad_html_options_are_refused_by_name(tmp_path, extra, message):
    p = _files(tmp_path)
    args = [str(p["copy"]), str(p["generic"]), "--ref", str(p["refs"]),
            "--html", str(tmp_path / "x.html")]
    if "--src" not in extra:
        args += ["--src", str(p["src"])]
    with pytest.raises(SystemExit, match=re.escape(message)):
        C.main(args + extra)
    assert not (tmp_path / "x.html").exists()


def test_baselines_of_another_test_set_are_refused(tmp_path):
    p = _files(tmp_path)
    json.dump({"systems": {}, "documents": 100}, open(tmp_path / "b.json", "w"))
    with pytest.raises(SystemExit, match="is of 100 documents, the systems of 3"):
        C.main([str(p["copy"]), str(p["generic"]), "--ref", str(p["refs"]), "--src", str(p["src"]),
                "--baselines", str(tmp_path / "b.json"), "--html", str(tmp_path / "x.html")])


def test_a_source_file_of_another_length_is_refused(tmp_path):
    p = _files(tmp_path)
    p["src"].write_text("one document\n")
    with pytest.raises(SystemExit, match="has 1 documents for 3 summaries"):
        C.main([str(p["copy"]), str(p["generic"]), "--ref", str(p["refs"]), "--src", str(p["src"]),
                "--html", str(tmp_path / "x.html")])


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None,
                    reason="no chromium (Debian: apt-get install chromium) to load the page")
def test_the_page_runs_in_a_headless_browser_without_network(tmp_path):
    """Chromium loads the page with every network request sent to a closed port; its script ran (it
    sorts the documents and marks the body ready) and the text is there."""
    p = _files(tmp_path)
    html = tmp_path / "report.html"
    C.main([str(p["copy"]), str(p["generic"]), str(p["copy"]), "--ref", str(p["refs"]),
            "--src", str(p["src"]), "--html", str(html), "--bootstrap-samples", "100"])
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--proxy-server=127.0.0.1:9",
                           "--user-data-dir=" + str(tmp_path / "profile"),
                           "--dump-dom", html.as_uri()],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert 'data-ready="1"' in dom and "document order</span>" in dom
    # a third system is named after its folder, made unique
    assert "document 2" in dom and "copy (3)" in dom


def test_a_long_test_set_shows_the_documents_where_systems_differ_most(tmp_path):
    p = _files(tmp_path)
    html = tmp_path / "r.html"
    C.main([str(p["copy"]), str(p["generic"]), "--ref", str(p["refs"]), "--src", str(p["src"]),
            "--html-docs", "1", "--html", str(html), "--bootstrap-samples", "100"])
    page = html.read_text()
    # ROUGE-2 spread: the copy system matches documents 1 exactly (100) and 0 nearly; generic none
    assert ("3 documents, 2 systems; the 1 documents shown below are those with the largest "
            "ROUGE-2 spread") in page
    assert page.count('<div class="doc"') == 1 and "document 1</h3>" in page


def test_documents_of_another_split_are_refused_against_the_s_lines(tmp_path):
    p = _files(tmp_path)
    gens = []
    for name, hyps in (("copy", COPY), ("generic", GENERIC)):
        path = tmp_path / name / "test.out"
        with open(path, "w") as f:
            for i, (h, r, s) in enumerate(zip(hyps, REFS, SOURCES)):
                f.write(f"S-{i}\t{s}\nT-{i}\t{r}\nH-{i}\t-0.1\t{h}\n")
        gens.append(str(path))
    args = gens + ["--ref", str(p["refs"]), "--html", str(tmp_path / "x.html"),
                   "--bootstrap-samples", "10"]
    C.main(args + ["--src", str(p["src"])])  # the same documents: accepted
    assert "document 2" in (tmp_path / "x.html").read_text()
    (tmp_path / "x.html").unlink()
    p["src"].write_text("\n".join(reversed(SOURCES)) + "\n")
    with pytest.raises(SystemExit, match="document 0 .* does not start with the S- line"):
        C.main(args + ["--src", str(p["src"])])
    assert not (tmp_path / "x.html").exists()
    C.main(args)  # without --src: the S- lines themselves
    assert "Critics were unhappy." in (tmp_path / "x.html").read_text()


QUICKSTART = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results",
                          "quickstart")


def _two_in_one_folder(tmp_path, manifest=True):
    """The committed decodings of the 150-update and the 2-update quickstart models in one folder,
    with the 150-update run's source_use.json (and its decodings.json)."""
    folder = tmp_path / "both"
    folder.mkdir()
    run = os.path.join(QUICKSTART, "seed1-150")
    shutil.copy(os.path.join(run, "decodings.txt"), folder / "u150.txt")
    shutil.copy(os.path.join(QUICKSTART, "seed1-2", "decodings.txt"), folder / "u2.txt")
    shutil.copy(os.path.join(run, "source_use.json"), folder / "source_use.json")
    if manifest:
        shutil.copy(os.path.join(run, "decodings.json"), folder / "decodings.json")
    return folder


def _page(tmp_path, folder, *extra):
    html = tmp_path / "r.html"
    C.main([str(folder / "u150.txt"), str(folder / "u2.txt"), "--no-detok",
            "--ref", os.path.join(QUICKSTART, "references.txt"),
            "--src", os.path.join(QUICKSTART, "sources.txt"), "--names", "u150,u2",
            "--html", str(html), "--bootstrap-samples", "100", *extra])
    return html.read_text()


def test_a_source_use_json_beside_two_outputs_is_used_only_for_its_own(tmp_path):
    """Before: both systems of one folder got its source_use.json, the 2-update model the
    150-update model's source gain 0.636 (its own is 1.434) and its verdict the other's test NLL
    8.112 (its own 9.917). Now the run manifest (decodings.json) names the 150-update decodings
    only: the 2-update model's gain and NLL are not measured, with the reason shown."""
    folder = _two_in_one_folder(tmp_path)
    page = _page(tmp_path, folder, "--baselines", os.path.join(QUICKSTART, "baselines.json"))
    rows = {m.group(1): m.group(0) for m in re.finditer(r"<tr><td>(u150|u2)</td>.*?</tr>", page)}
    assert "<td>0.636</td>" in rows["u150"] and "0.636" not in rows["u2"]
    assert "not measured: source_use.json beside u2.txt records no hash of it" in rows["u2"]
    assert "test NLL not measured" in rows["u2"] and "8.112" not in rows["u2"]
    assert "test NLL 8.112" not in rows["u150"]  # its own NLL, below the bag's: no reason


def test_a_source_use_json_that_records_another_outputs_hash_is_not_used(tmp_path):
    """The file records the sha256 of the output it measured: another file of the folder is told
    apart by it, even without a manifest; a file without hash and manifest is used for none."""
    from fairseq_sum_plugins.evaluation.decodings import sha256_file

    folder = _two_in_one_folder(tmp_path, manifest=False)
    use, why = C.source_use_for(str(folder / "u150.txt"))
    assert use is None and "records no hash of it" in why
    data = json.loads((folder / "source_use.json").read_text())
    data["generate_output_sha256"] = sha256_file(folder / "u150.txt")
    (folder / "source_use.json").write_text(json.dumps(data))
    assert C.source_use_for(str(folder / "u150.txt"))[0]["gain"] == data["gain"]
    use, why = C.source_use_for(str(folder / "u2.txt"))
    assert use is None and "is of another output" in why
    assert C.source_use_for(str(tmp_path / "nowhere" / "x.txt")) == (None, None)
    for bad, why in (("{not json", "cannot be read"), ("[1, 2]", "is not a JSON object")):
        (folder / "source_use.json").write_text(bad)
        use, got = C.source_use_for(str(folder / "u150.txt"))
        assert use is None and why in got and "u150.txt" in got


def test_a_file_the_manifest_records_besides_the_decodings_gets_no_figures(tmp_path):
    """The run manifests also record the references, sources and checkpoint: before, the run's
    sources.txt (or references.txt) compared as a system from its folder got the model's source
    gain 0.636 and test NLL 8.112. Only the decodings (or generate output) they name count."""
    folder = _two_in_one_folder(tmp_path)
    run = os.path.join(QUICKSTART, "seed1-150")
    shutil.copy(os.path.join(run, "hashes.json"), folder / "hashes.json")
    for name in ("sources.txt", "references.txt"):
        shutil.copy(os.path.join(QUICKSTART, name), folder / name)
        use, why = C.source_use_for(str(folder / name))
        assert use is None and f"beside {name} records no hash of it" in why
    own = json.loads((folder / "source_use.json").read_text())
    assert C.source_use_for(str(folder / "u150.txt"))[0] == own  # gain 0.636, its own
    (folder / "decodings.json").unlink()  # hashes.json's decodings.txt alone names it
    assert C.source_use_for(str(folder / "u150.txt"))[0] is not None
    assert C.source_use_for(str(folder / "u2.txt"))[0] is None


def test_the_page_shows_the_tables_test_and_p_and_names_it(tmp_path, capsys):
    """Before: with --method ar the table printed approximate randomization's p and the page the
    bootstrap's, without naming either."""
    folder = _two_in_one_folder(tmp_path)
    page = _page(tmp_path, folder, "--method", "ar", "--ar-trials", "2000")
    printed = capsys.readouterr().out
    p_table = re.search(r"^ROUGE-2\s.*\s(\d\.\d{4})$", printed, re.M).group(1)
    assert "p-values by approximate randomization" in printed
    assert "ROUGE-2 diff [95% CI], p (approximate randomization)" in page
    row = re.search(r"<tr><td>u2</td>.*?</tr>", page).group(0)
    assert f", p {p_table}</td>" in row
    page = _page(tmp_path, folder)
    assert "ROUGE-2 diff [95% CI], p (paired bootstrap)" in page


def test_a_page_with_baselines_states_each_systems_paired_test_against_lead3(tmp_path):
    """Before: the page had the verdicts but no test against Lead-3. Now, with the extracts
    fairseq-sum-baselines wrote beside --baselines, each system's sentence of the generated tables
    is under the page's table: the quickstart model's figures against Lead-3 are those of
    results/quickstart/results (index.json), by the same test; then against the first system."""
    from fairseq_sum_plugins.evaluation.lead3_statement import paired_text

    folder = _two_in_one_folder(tmp_path)
    html = tmp_path / "r.html"
    C.main([str(folder / "u150.txt"), str(folder / "u2.txt"), "--no-detok",
            "--ref", os.path.join(QUICKSTART, "references.txt"),
            "--src", os.path.join(QUICKSTART, "sources.txt"), "--names", "u150,u2",
            "--baselines", os.path.join(QUICKSTART, "baselines.json"), "--html", str(html)])
    page = html.read_text()
    index = json.load(open(os.path.join(os.path.dirname(QUICKSTART), "index.json")))
    runs = {label: f for r in index["records"] if r["table"] == "quickstart"
            for label, f in r["models"].items()}
    assert ("Per system, the paired bootstrap against Lead-3's extracts and against u150"
            in page)
    for name, label in (("u150", "quickstart"), ("u2", "copy-2-updates")):
        said = (f"<li><code>{name}</code>: not specific to its document; against Lead-3 "
                f"{paired_text(runs[label]['vs_lead3'][0])}, ROUGE-2 significantly below.")
        assert said in page, name
    assert "Against <code>u150</code> (the table&#x27;s baseline model): ROUGE-1/2/L " in page


def test_a_lead3_extract_that_is_not_the_baselines_own_is_not_used(tmp_path):
    base = tmp_path / "baselines.json"
    shutil.copy(os.path.join(QUICKSTART, "baselines.json"), base)
    shutil.copytree(os.path.join(QUICKSTART, "baselines"), tmp_path / "baselines")
    data = json.load(open(base))
    lines, why = C.lead3_extract(str(base), data, 100)
    assert why is None and len(lines) == 100
    assert C.lead3_extract(str(base), data, 99)[1].endswith("has 100 documents, the systems 99")
    extract = tmp_path / "baselines" / "lead3.txt"
    extract.write_text(extract.read_text().replace("If machine", "If a machine", 1))
    assert C.lead3_extract(str(base), data, 100)[1].endswith("differs from its hash in SHA256SUMS")


def _foreign_baselines(tmp_path):
    """Baselines of another data set with the quickstart's 100 documents, consistent in
    themselves: the first 100 XSum documents of results/xsum-read, their Lead-3 extract (with its
    SHA256SUMS) and the figures it scores against their own references."""
    from fairseq_sum_plugins.evaluation.decodings import read_decodings, scorer, sha256_file

    xsum = os.path.join(os.path.dirname(QUICKSTART), "xsum-read")
    lead3 = read_decodings(os.path.join(xsum, "baselines", "lead3.txt"))[:100]
    refs = read_decodings(os.path.join(xsum, "references.txt"))[:100]
    rows = scorer().documents(*scorer().pairs(lead3, refs))
    data = json.load(open(os.path.join(QUICKSTART, "baselines.json")))
    data["systems"]["lead3"].update({k: float(rows[k][:, 2].mean())
                                     for k in ("rouge1", "rouge2", "rougeL")})
    folder = tmp_path / "foreign"
    (folder / "baselines").mkdir(parents=True)
    (folder / "baselines" / "lead3.txt").write_text("\n".join(lead3) + "\n")
    (folder / "baselines" / "SHA256SUMS").write_text(
        f"{sha256_file(folder / 'baselines' / 'lead3.txt')}  lead3.txt\n")
    json.dump(data, open(folder / "baselines.json", "w"))
    return folder / "baselines.json", data["systems"]["lead3"]


def test_baselines_of_another_data_set_with_as_many_documents_are_refused(tmp_path):
    """Before: the page tested the quickstart models against the XSum Lead-3 extract of the
    foreign baselines.json (same 100 documents) and printed that paired test. Now the extract,
    scored against the compared references, must give the figures the JSON records."""
    folder = _two_in_one_folder(tmp_path)
    foreign, lead3 = _foreign_baselines(tmp_path)
    html = tmp_path / "r.html"
    with pytest.raises(SystemExit) as e:
        _page(tmp_path, folder, "--baselines", str(foreign))
    said = str(e.value)
    assert said.startswith(f"fairseq-sum-compare: error: --baselines {foreign}: its Lead-3 "
                           "extract scores ROUGE-1/2/L ")
    recorded = "/".join(f"{100 * lead3[k]:.2f}" for k in ("rouge1", "rouge2", "rougeL"))
    assert f"the file records {recorded}: baselines of another test set" in said
    assert not html.exists()
    # the quickstart's own baselines pass the same check
    assert "baseline: lead3" in _page(tmp_path, folder, "--baselines",
                                       os.path.join(QUICKSTART, "baselines.json"))


def test_baselines_whose_data_hash_is_not_the_data_folders_are_refused(tmp_path):
    import argparse

    from fairseq_sum_plugins.evaluation.decodings import data_sha256

    data = tmp_path / "bin"
    data.mkdir()
    for name in ("dict.src.txt", "test.src-tgt.src.bin", "test.src-tgt.src.idx",
                 "test.ref.jsonl"):
        (data / name).write_text(name)
    args = argparse.Namespace(data=str(data), split=None, baselines="b.json")
    recorded = {"data_sha256": data_sha256(str(data)), "split": "test"}
    C.check_baselines(args, recorded)  # the data the baselines were made of
    (data / "test.ref.jsonl").write_text('{"summary": "another reference"}')
    with pytest.raises(ValueError, match=rf"--baselines b.json records the data sha256 "
                                         rf"{recorded['data_sha256'][:12]}, --data "
                                         rf"{re.escape(str(data))} \(test\) hashes to \w{{12}}"):
        C.check_baselines(args, recorded)
