"""What the tools around the models print and draw: quiet fairseq start-up, --eval-rouge progress,
whole words and non-overlapping labels in the analysis figures."""
import logging
import os
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from fairseq_sum_plugins import quiet
from fairseq_sum_plugins.evaluation.plotting import join_pieces, place_labels, pyplot
from fairseq_sum_plugins.inspection.roles import sublayer_label
from fairseq_sum_plugins.inspection.topics import whole_words
from helpers import load_script


def test_hydra_deprecation_warnings_are_ignored():
    messages = ["hydra.experimental.initialize() is no longer experimental. Use hydra.initialize()",
                "\nThe version_base parameter is not specified.\nPlease specify a compatability version level",
                "In 'config': Usage of deprecated keyword in package header '# @package _group_'.",
                "\n'config' is validated against ConfigStore schema with the same name.",
                "\nThe strict flag in the compose API is deprecated."]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # what pytest sets per test; the plugin's filters go in front
        quiet.install()
        for m in messages:
            warnings.warn(m, UserWarning)
        warnings.warn("a warning of the user's own", UserWarning)
    assert [str(w.message) for w in caught] == ["a warning of the user's own"]


def test_banner_filter_shortens_config_and_module_tree():
    from omegaconf import OmegaConf

    f = quiet.BannerFilter()

    def record(msg):
        r = logging.LogRecord("fairseq_cli.train", logging.INFO, __file__, 1, msg, (), None)
        assert f.filter(r)
        return r.getMessage()

    assert record(OmegaConf.create({"common": {"seed": 1}})) == \
        "configuration not printed (FAIRSEQ_SUM_VERBOSE=1 prints it)"
    assert record(torch.nn.Linear(2, 2)) == "Linear: module tree not printed (FAIRSEQ_SUM_VERBOSE=1 prints it)"
    assert record("num. shared model params: 10") == "num. shared model params: 10"
    assert any(isinstance(x, quiet.BannerFilter) for x in logging.getLogger("fairseq_cli.generate").filters)


@pytest.mark.slow
def test_a_figure_logs_no_font_search_although_fairseq_set_the_root_logger_to_debug(tmp_path):
    """A fresh interpreter: the plugin imported, then fairseq (registering it), then one figure
    drawn."""
    import os
    import subprocess
    import sys

    code = ("import logging, fairseq_sum_plugins, fairseq\n"
            "assert logging.getLogger().level == logging.DEBUG  # fairseq's doing\n"
            "from fairseq_sum_plugins.evaluation.plotting import pyplot\n"
            "plt = pyplot(); fig, ax = plt.subplots(); ax.set_title('x'); fig.savefig(%r)\n" % str(tmp_path / "f.png"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "FAIRSEQ_SUM_VERBOSE": ""})
    assert proc.returncode == 0, proc.stderr
    assert "findfont" not in proc.stderr and "DEBUG:matplotlib" not in proc.stderr


@pytest.mark.slow
def test_importing_the_plugin_first_prints_no_tensorboardx_notice():
    """fairseq's text_to_speech logs it at import; the plugin's reports (compare.sh's vs_*.txt) carried it."""
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "import fairseq_sum_plugins, fairseq.tasks"],
                          capture_output=True, text=True, env={**os.environ, "FAIRSEQ_SUM_VERBOSE": ""})
    assert proc.returncode == 0, proc.stderr
    assert "tensorboardX" not in proc.stderr
    verbose = subprocess.run([sys.executable, "-c", "import fairseq_sum_plugins, fairseq.tasks"],
                             capture_output=True, text=True,
                             env={**os.environ, "FAIRSEQ_SUM_VERBOSE": "1"})
    assert "tensorboardX" in verbose.stderr  # the notice exists: the filter, not its absence, hides it


def test_eval_rouge_progress_is_logged(caplog):
    from fairseq_sum_plugins.tasks.summarization import SummarizationTask

    task = SimpleNamespace(ROUGE_PROGRESS_SECONDS=0, datasets={"valid": [0] * 10, "train": [0] * 99})
    with caplog.at_level(logging.INFO, logger="fairseq_sum_plugins.tasks.summarization"):
        SummarizationTask.rouge_progress(task, 4)
        SummarizationTask.rouge_progress(task, 3)
    lines = [r.getMessage() for r in caplog.records if "--eval-rouge" in r.getMessage()]
    assert lines[0].startswith("--eval-rouge: 4 of 10 validation summaries") and "7 of 10" in lines[1]


def test_join_pieces_into_words():
    pieces = ["\u2581The", "\u2581commit", "tee", "\u2581said", ".", "<sep>", "\u2581Critic", "s"]
    words, scores = join_pieces(pieces, [0.1, 0.2, 0.9, 0.3, 0.05, 0.5, 0.4, 0.6])
    assert words == ["The", "committee", "said.", "<sep>", "Critics"]
    assert scores == [0.1, 0.9, 0.3, 0.5, 0.6]
    assert join_pieces(["12", "7"], [0.1, 0.2]) == (["12", "7"], [0.1, 0.2])  # GPT-2 ids: as they are


def _write_bin(path, d, lines):
    from fairseq.data import indexed_dataset

    builder = indexed_dataset.make_builder(path + ".bin", impl="mmap", vocab_size=len(d))
    for line in lines:
        builder.add_item(torch.IntTensor([d.index(t) for t in line.split()] + [d.eos()]))
    builder.finalize(path + ".idx")


def test_whole_words_leave_out_word_pieces(tmp_path):
    from fairseq.data import Dictionary

    d = Dictionary()
    for sym in ["\u2581entit", "ies", "\u2581entity", "\u2581the", "\u2581a", "ing", "\u2581,"]:
        d.add_symbol(sym)
    model = SimpleNamespace(surfaces=None)
    syms = lambda mask, dic=d: [dic[i] for i in np.flatnonzero(mask)]  # noqa: E731
    # without data: every word-initial piece with a letter
    assert syms(whole_words(model, d)) == ["\u2581entit", "\u2581entity", "\u2581the", "\u2581a"]
    _write_bin(str(tmp_path / "train.src-tgt.src"), d,
               ["\u2581the \u2581entit ies \u2581, \u2581entity", "\u2581a \u2581entit ies"])
    # "▁entit" is always followed by "ies": a fragment; "▁a" (one letter) is a word here
    assert syms(whole_words(model, d, str(tmp_path))) == ["\u2581entity", "\u2581the", "\u2581a"]
    word_level = Dictionary()
    for sym in ["cat", "dog", ","]:
        word_level.add_symbol(sym)
    assert syms(whole_words(model, word_level), word_level) == ["cat", "dog"]


def test_place_labels_never_overlap():
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(3, 3))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    points = [(0.5, 0.5)] * 30 + [(0.1, 0.1)]
    skipped = place_labels(ax, points, [f"label{i}" for i in range(31)])
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert len(boxes) == 31 - skipped and 0 < skipped < 30
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert "label30" in [t.get_text() for t in ax.texts]  # a label elsewhere is placed
    plt.close(fig)


def test_role_sublayer_labels_are_one_based():
    assert sublayer_label("encoder.layers.0.self_attn_binding") == "encoder layer 1 self-attn"
    assert sublayer_label("decoder.layers.2.cross_attn_binding") == "decoder layer 3 cross-attn"
    assert sublayer_label("decoder.layers.1.ffn_binding") == "decoder layer 2 ffn"


def test_memory_heatmap_scale_and_ticks(tmp_path, monkeypatch):
    from fairseq_sum_plugins.inspection import implicit_extraction

    plt = pyplot()
    saved = {}
    monkeypatch.setattr(plt, "close", lambda fig: saved.setdefault("fig", fig))
    implicit_extraction.plot_matrix(np.array([[0.2, 0.3, 0.25], [0.4, 0.35, 0.3]]), str(tmp_path / "m.png"),
                                    "input sentence", "t")
    ax = saved["fig"].axes[0]
    saved["fig"].canvas.draw()
    assert ax.images[0].get_clim() == (0.2, 0.4)  # from the data, not from 0
    assert [t.get_text() for t in ax.get_xticklabels() if t.get_text()] == ["1", "2", "3"]
    assert [t.get_text() for t in ax.get_yticklabels() if t.get_text()] == ["1", "2"]


def test_focus_plot_names_the_document_in_words():
    from fairseq.data import Dictionary

    from fairseq_sum_plugins.inspection.focus_plot import document_name

    d = Dictionary()
    for sym in "\u2581The \u2581commit tee \u2581said <sep> \u2581It \u2581left fast red".split():
        d.add_symbol(sym)
    task = SimpleNamespace(source_dictionary=d)
    ids = lambda words: torch.tensor([d.index(w) for w in words.split()] + [d.eos()])  # noqa: E731
    assert document_name(task, "test", 0, ids("\u2581The \u2581commit tee \u2581said <sep> \u2581It \u2581left")) == \
        'test #0 (8 tokens): "The committee said / It left"'
    assert document_name(task, "valid", 3, ids("fast red fast"), words=2) == 'valid #3 (4 tokens): "fast red ..."'


def test_gate_plot_words_of_gpt2_ids(tmp_path):
    """BART data: the GPT-2 ids of the gate plot become words ("cats" = " cat" + "s")."""
    from helpers import encoder_of, write_gpt2_files

    from fairseq_sum_plugins.inspection.gate_sweep import gpt2_pieces

    files = write_gpt2_files(str(tmp_path))
    ids = [str(i) for i in encoder_of(files).encode("The cats sat on the farm.")]
    pieces = gpt2_pieces(ids + ["</s>"], files["encoder.json"], files["vocab.bpe"])
    words, scores = join_pieces(pieces, list(range(len(pieces))))
    assert words == ["The", "cats", "sat", "on", "the", "farm.", "</s>"]
    assert scores[-1] == len(pieces) - 1


def test_topic_top_words_are_whole_words():
    from fairseq.data import Dictionary

    from fairseq_sum_plugins.inspection.topics import top_words

    d = Dictionary()
    for sym in ["\u2581bank", "ing", "\u2581loan", "\u2581cat", "s"]:
        d.add_symbol(sym)
    phi = np.full((len(d), 2), 1e-3)
    phi[d.index("ing"), 0], phi[d.index("\u2581bank"), 0], phi[d.index("\u2581loan"), 0] = 0.5, 0.3, 0.2
    phi[d.index("\u2581cat"), 1], phi[d.index("s"), 1] = 0.6, 0.4
    model = SimpleNamespace(phi=phi, keep=np.arange(len(d)) >= d.nspecial, surfaces=None,
                            surface=lambda i, dic: dic[i].replace("\u2581", ""))
    assert top_words(model, d, 0, 3) == ["bank", "loan", "cat"]  # "ing" (the largest) left out
    assert top_words(model, d, 1, 1) == ["cat"]


def load_learning_parity():
    return load_script("benchmarks", "learning_parity.py")


@pytest.mark.parametrize("extra, message", [
    (["--heads", "3"], "--embed-dim 32 is not divisible by --heads 3"),  # was a ValueError traceback
    (["--lr", "-1"], "--lr must be a positive number, got -1.0"),  # was torch's ValueError traceback
    (["--lr", "nan"], "--lr must be a positive number, got nan"),
    (["--pairs", "t5,t5"], "--pairs names a value twice"),  # was trained twice
    (["--seeds", "1,1"], "--seeds names a value twice"),
    (["--max-source-positions", "0"], "--max-source-positions must be at least 1"),  # looped forever
    (["--json", "/nonexistent/p.json"], "--json /nonexistent/p.json: its folder does not exist"),  # after training
])
def test_learning_parity_refuses_bad_numbers_before_training(toy_data, extra, message, capsys):
    lp = load_learning_parity()
    with pytest.raises(SystemExit):
        lp.parse_args([toy_data, "--updates", "3", "--valid-every", "1", "--seeds", "1", "--pairs", "t5",
                       "--embed-dim", "32", *extra])
    assert message in capsys.readouterr().err


def test_learning_parity_refuses_a_folder_without_a_valid_split(toy_data, tmp_path, capsys):
    import shutil

    lp = load_learning_parity()
    for name in os.listdir(toy_data):
        if not name.startswith("valid."):
            shutil.copy(os.path.join(toy_data, name), tmp_path)
    with pytest.raises(SystemExit):  # was fairseq's FileNotFoundError traceback
        lp.parse_args([str(tmp_path), "--pairs", "t5"])
    assert "no binarized valid split" in capsys.readouterr().err


def test_learning_parity_refuses_a_folder_without_a_joined_dictionary(toy_data, tmp_path, capsys):
    import shutil

    lp = load_learning_parity()
    shutil.copytree(toy_data, tmp_path / "data")
    with open(tmp_path / "data" / "dict.tgt.txt", "a") as f:
        f.write("extraword 1\n")
    with pytest.raises(SystemExit):  # was a ValueError traceback from building the models
        lp.parse_args([str(tmp_path / "data"), "--pairs", "t5"])
    assert "dict.src.txt and dict.tgt.txt differ" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [(["--max-source-positions", "3"], "train: all 64 examples"),
                                            (["--max-tokens", "5"], "should not exceed max_tokens=5")])
def test_learning_parity_stops_when_no_batch_fits_the_limits(toy_data, monkeypatch, extra, message):
    lp = load_learning_parity()

    def train(*args, **kwargs):  # an empty train split looped over empty epochs forever
        raise AssertionError("training started")

    monkeypatch.setattr(lp, "run_seed", train)
    with pytest.raises(SystemExit) as e:
        lp.main([toy_data, "--updates", "3", "--seeds", "1", "--pairs", "t5", *extra])
    assert message in str(e.value) and "--max-source-positions" in str(e.value)


def test_focus_plot_refuses_an_output_in_a_missing_folder_before_loading(capsys):
    from fairseq_sum_plugins.inspection import focus_plot

    with pytest.raises(SystemExit):
        focus_plot.main(["data/bin", "--path", "no-such-checkpoint.pt", "--png", "f.png",
                         "--all-json", "/no/such/folder/focus_all.json"])
    assert "--all-json /no/such/folder/focus_all.json: its folder does not exist" in capsys.readouterr().err
