"""One scorer: fairseq-sum-score, fairseq-sum-compare, --eval-rouge, the gate sweep and
fairseq-generate --scoring rouge give the same ROUGE for the same summaries and the same
--scorer / --sentence-sep (ROUGE-1.5.5 included where it is installed)."""
from argparse import Namespace

import pytest
import torch

from helpers import load_task
from helpers import _perl_ready

from fairseq_sum_plugins.scoring import rouge as R
from fairseq_sum_plugins.scoring import score as S
from fairseq_sum_plugins.evaluation import compare as C
from tolerances import approx64, fp64_tol

# " <q> " ends sentences only with --sentence-sep '<q>': summary-level ROUGE-L differs without it
HYPS = ["e f a b x <q> g h c d", "the cat sat on the mat <q> it was happy",
        "Police arrested two men on Tuesday . <q> They were charged with theft .", ""]
OTHER = ["a b c d", "the cat sat", "Two men were arrested .", "some text"]
REFS = ["a b c d <q> e f g h", "the cat sat on a mat <q> the dog was happy",
        "Two men were arrested by police . <q> The men face theft charges .", "some reference text"]
# rouge-score: the default's deprecated name, an alias in every entry point
BACKENDS = ["rouge155-py", "rouge-score", pytest.param("official", marks=pytest.mark.skipif(
    _perl_ready() is not None, reason=str(_perl_ready())))]


def _files(tmp_path):
    for name, lines in (("hyp", HYPS), ("other", OTHER), ("ref", REFS)):
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    return [str(tmp_path / n) for n in ("hyp", "other", "ref")]


def task_rouge(data, monkeypatch, hyps, refs, **cfg):
    """ROUGE-1/2/L F1 means of one --eval-rouge validation step whose generated summaries are ``hyps``."""
    from fairseq.data import data_utils
    from fairseq.tasks.translation import TranslationTask

    task = load_task(data, eval_rouge=True, **cfg)
    d = task.tgt_dict
    for text in hyps + refs:
        for w in text.split():
            d.add_symbol(w)

    def encode(text):
        return d.encode_line(text, add_if_not_exist=False).long()

    monkeypatch.setattr(TranslationTask, "valid_step", lambda self, sample, model, crit: (0.0, 1, {}))
    task.sequence_generator = None
    task.inference_step = lambda gen, models, sample, **kw: [[{"tokens": encode(h)}] for h in hyps]
    target = data_utils.collate_tokens([encode(r) for r in refs], d.pad())
    _, _, log = task.valid_step({"target": target}, None, None)
    return [log[f"_{k}_sum"] / log["_rouge_n"] for k in ("rouge_1", "rouge_2", "rouge_l")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_five_entry_points_give_the_same_numbers(backend, tmp_path, toy_data, monkeypatch):
    from fairseq_sum_plugins.inspection import gate_sweep
    from fairseq_sum_plugins.scoring.fairseq_scoring import RougeScorer

    hyp, other, ref = _files(tmp_path)
    options = ["--scorer", backend, "--sentence-sep", "<q>"]
    score = S.main(["--hyp", hyp, "--ref", ref, "--bootstrap-samples", "0", *options])
    expect = [score[m] for m in R.MAIN_METRICS]
    # the separator is seen: without it the numbers differ
    assert S.main(["--hyp", hyp, "--ref", ref, "--bootstrap-samples", "0", "--scorer", backend])["rougeL"] < expect[2] - 0.05

    cmp = C.main([hyp, other, "--ref", ref, "--bootstrap-samples", "10", "--ar-trials", "10", *options])
    # F1s <= 1 (x 100 for fairseq's scorers) averaged in float64 in another order
    assert [cmp["metrics"][m]["a"] for m in R.MAIN_METRICS] == pytest.approx(expect,
                                                                             abs=fp64_tol(1))

    val = task_rouge(toy_data, monkeypatch, HYPS, REFS, eval_rouge_scorer=backend, eval_rouge_sentence_sep="<q>")
    assert val == pytest.approx(expect, abs=fp64_tol(1))

    args = gate_sweep.get_parser().parse_args(["DATA", "--path", "ckpt.pt", "--out", "out", *options])
    percent = pytest.approx([100 * x for x in expect], abs=fp64_tol(100))
    assert gate_sweep.rouge_f1(R.scorer_from_args(args), HYPS, REFS) == percent

    generate = RougeScorer(Namespace(scorer=backend, sentence_sep="<q>"))
    for h, r in zip(HYPS, REFS):
        generate.add_string(r, h)
    assert [generate.score()[m] for m in R.MAIN_METRICS] == percent


def test_fairseq_flags_reach_the_scorer(toy_data):
    """--scoring rouge --scorer/--sentence-sep in fairseq-generate, --eval-rouge-scorer/-sentence-sep
    in fairseq-train, parsed by fairseq and built into the same Scorer."""
    from fairseq import options, scoring
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_generation_parser(default_task="summarization")
    args = options.parse_args_and_arch(parser, [toy_data, "--path", "x.pt", "--scoring", "rouge", "--scorer", "official",
                                                "--sentence-sep", "<q> <t>"])
    scorer = scoring.build_scorer(convert_namespace_to_omegaconf(args).scoring, None)
    assert scorer.scorer() == R.Scorer("official", ("<q>", "<t>"))
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [toy_data, "--task", "summarization", "--arch", "transformer_ta_small",
                                                "--optimizer", "adam", "--eval-rouge", "--eval-rouge-scorer", "official",
                                                "--eval-rouge-sentence-sep", "<q>"])
    task = load_task(toy_data, eval_rouge=True, eval_rouge_scorer=args.eval_rouge_scorer,
                     eval_rouge_sentence_sep=args.eval_rouge_sentence_sep)
    assert task.rouge_scorer() == R.Scorer("official", ("<q>",))
    # the default, by its name and by its deprecated name, in both fairseq options
    for flags in ([], ["--scorer", "rouge155-py"], ["--scorer", "rouge-score"]):
        args = options.parse_args_and_arch(options.get_generation_parser(default_task="summarization"),
                                           [toy_data, "--path", "x.pt", "--scoring", "rouge", *flags])
        scorer = scoring.build_scorer(convert_namespace_to_omegaconf(args).scoring, None)
        assert scorer.scorer() == R.Scorer("rouge155-py") and scorer.scorer().backend == "rouge155-py"
        args = options.parse_args_and_arch(options.get_training_parser(), [
            toy_data, "--task", "summarization", "--arch", "transformer_ta_small", "--optimizer", "adam",
            "--eval-rouge", *[f.replace("--scorer", "--eval-rouge-scorer") for f in flags]])
        task = load_task(toy_data, eval_rouge=True, eval_rouge_scorer=args.eval_rouge_scorer)
        assert task.rouge_scorer() == R.Scorer("rouge155-py")
    with pytest.raises(SystemExit):
        options.parse_args_and_arch(options.get_training_parser(), [toy_data, "--task", "summarization", "--arch",
                                                                    "transformer_ta_small", "--eval-rouge-scorer", "perl"])


def test_validation_scores_a_reference_without_a_word_zero_as_before(toy_data, monkeypatch):
    """--eval-rouge has no sample id to name: a wordless target counts as a document scoring 0 (the
    mean over the others is scaled by 2/3), on either backend's path."""
    hyps, refs = ["the cat sat", "a b", "x y"], ["the cat sat down", "...", "x y z"]
    both = R.document_scores([hyps[0], hyps[2]], [refs[0], refs[2]])
    val = task_rouge(toy_data, monkeypatch, hyps, refs)
    assert val == pytest.approx([sum(d["fmeasure"] for d in both[m]) / 3 for m in R.MAIN_METRICS],
                                abs=fp64_tol(1))
    assert R.rouge_pair(["a b"], []) == (0.0, 0.0, 0.0)  # what rouge_score's counting gives such a pair


def test_compare_with_official_scorer_and_meteor_impl(tmp_path, capsys):
    hyp, other, ref = _files(tmp_path)
    with pytest.raises(SystemExit):
        C.main([hyp, other, "--ref", ref, "--scorer", "files2rouge"])  # no per-document scores
    assert "invalid choice: 'files2rouge'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        C.main([hyp, other, "--ref", ref, "--meteor-impl", "1.5"])
    assert "--meteor-impl goes with --metrics ...,meteor" in capsys.readouterr().err
    if _perl_ready() is None:
        with pytest.raises(SystemExit, match="--scorer official has no metric rougeL_plain"):
            C.main([hyp, other, "--ref", ref, "--scorer", "official", "--metrics", "rouge1,rougeL_plain"])


def test_meteor_of_compare_is_the_scorers(tmp_path, monkeypatch):
    """--metrics meteor with --meteor-impl: the per-document METEOR of the implementation named, labelled."""
    from fairseq_sum_plugins.scoring import meteor

    calls = []
    monkeypatch.setattr(meteor, "meteor_scores", lambda h, r, impl="nltk": calls.append(impl) or [0.5] * len(h))
    monkeypatch.setattr(meteor, "impl_label", lambda impl: f"label-{impl}")
    hyp, other, ref = _files(tmp_path)
    res = C.main([hyp, other, "--ref", ref, "--metrics", "rouge1,meteor", "--meteor-impl", "1.5",
                  "--bootstrap-samples", "10"])
    assert calls == ["1.5", "1.5"] and res["meteor_impl"] == "label-1.5"
    assert res["metrics"]["meteor"]["diff"] == 0.0


def test_bootstrap_is_one_resampler():
    """The paired test's differences and the scorer's CIs are the same resamples of one seed."""
    from fairseq_sum_plugins.scoring.bootstrap import bootstrap_ci, bootstrap_statistics

    a, b = torch.rand(30, generator=torch.Generator().manual_seed(0)).numpy(), torch.rand(30).numpy()
    delta, ci, _ = C.paired_bootstrap(a, b, 200, seed=4)
    lo, hi = bootstrap_ci(a - b, 200, seed=4)
    assert ci == (approx64(float(lo)), approx64(float(hi)))
    # tol: the mean of 200 resample means of 30 differences is delta within 4 standard errors
    # (sd(a - b) / sqrt(30 * 200) = 0.005 here); 0.05 before, 9 of them
    se = float((a - b).std()) / (len(a) * 200) ** 0.5
    resampled = bootstrap_statistics(a - b, 200, seed=4).mean()
    assert resampled == pytest.approx(delta, abs=4 * se)  # tol: 4 standard errors, above


@pytest.mark.parametrize("sep", ["", " ", "a b"])
def test_a_separator_that_is_not_one_token_is_refused(tmp_path, capsys, sep):
    hyp, other, ref = _files(tmp_path)
    for main, argv in ((S.main, ["--hyp", hyp, "--ref", ref]), (C.main, [hyp, other, "--ref", ref])):
        with pytest.raises(SystemExit):
            main([*argv, "--sentence-sep", sep])
        assert f"a sentence separator is one token without spaces, got {sep!r}" in capsys.readouterr().err
    with pytest.raises(ValueError, match="one token without spaces"):
        R.Scorer(seps=("<q>", sep))


def test_missing_rouge155_stops_the_gate_sweep_before_the_model_loads(monkeypatch, tmp_path, capsys):
    from fairseq_sum_plugins.inspection import gate_sweep

    monkeypatch.setenv("ROUGE155_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(RuntimeError, match="ROUGE-1.5.5.pl not found in"):
        R.Scorer("official").check()
    with pytest.raises(SystemExit):
        gate_sweep.main([str(tmp_path / "data"), "--path", str(tmp_path / "no.pt"), "--out", str(tmp_path / "o"),
                         "--scorer", "official"])
    assert "gate_sweep: error: ROUGE-1.5.5.pl not found in" in capsys.readouterr().err
