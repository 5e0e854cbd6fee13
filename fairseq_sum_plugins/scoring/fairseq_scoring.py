"""ROUGE as a ``fairseq-generate --scoring rouge`` scorer.

fairseq hands every scorer the detokenized target (the ``T-`` line) and hypothesis (``D-``) of each
test example through ``add_string``; this one cleans and scores them as ``fairseq-sum-score`` does
(:class:`fairseq_sum_plugins.scoring.rouge.Scorer`, with the same ``--scorer rouge155-py|official``
and ``--sentence-sep TOKEN`` (here one value, tokens separated by spaces: ``--sentence-sep '<q>
<t>'``), and prints ``ROUGE-1/2/L F1`` in generate's closing ``Generate ... with beam=N:`` line. The
references are the binarized targets, so they are truncated where ``fairseq-sum-prepare
--max-tgt-tokens`` cut them: the reported numbers for papers come from ``fairseq-sum-score``, which
reads the untruncated references.

fairseq passes no sample id to a scorer, so a reference with no word ROUGE counts (``...``) cannot
be named by its id here: such pairs are left out of the average, and the closing line says how
many and quotes the first (``fairseq-sum-score`` on the same output refuses it, naming the sample
id). With no pair left, the line says so instead of printing a number.
"""
from dataclasses import dataclass, field
from typing import Optional

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.scoring import SCORER_REGISTRY, BaseScorer, register_scorer

from .rouge import DEFAULT_BACKEND, DOCUMENT_BACKEND_NAMES, MAIN_METRICS, Scorer, separator_tokens
from .rouge_text import countable


@dataclass
class RougeScorerConfig(FairseqDataclass):
    scorer: ChoiceEnum(DOCUMENT_BACKEND_NAMES) = field(
        default=DEFAULT_BACKEND, metadata={"help": "ROUGE backend, as fairseq-sum-score --scorer"})
    sentence_sep: Optional[str] = field(
        default=None, metadata={
            "help": "extra sentence separator tokens, space-separated (e.g. '<q>'), as "
            "fairseq-sum-score --sentence-sep"
        })


class RougeScorer(BaseScorer):
    def scorer(self):
        """The :class:`~fairseq_sum_plugins.scoring.rouge.Scorer` of ``--scorer`` /
        ``--sentence-sep``."""
        return Scorer(str(getattr(self.cfg, "scorer", None) or DEFAULT_BACKEND),
                      separator_tokens(getattr(self.cfg, "sentence_sep", None)))

    def _split(self):
        """(hyps, refs) cleaned, of the pairs whose reference has a word ROUGE counts, and the other
        references."""
        scorer = self.scorer()
        hyps, refs, left_out = [], [], []
        for ref, pred in zip(self.ref, self.pred):
            ref_sents = scorer.sentences(ref)
            if countable(ref_sents):
                hyps.append(scorer.sentences(pred))
                refs.append(ref_sents)
            else:
                left_out.append(ref)
        return hyps, refs, left_out

    def score(self):
        """Summary-level ROUGE-1/2/L F1 (x100) over the pairs whose reference has a word; None
        when there is none."""
        hyps, refs, _ = self._split()
        if not refs:
            return None
        per = self.scorer().documents(hyps, refs)
        return {m: 100 * float(per[m].mean(0)[2]) for m in MAIN_METRICS}

    def result_string(self):
        _, refs, left_out = self._split()
        s = self.score()
        text = ("ROUGE-1/2/L F1 = n/a (no reference with a word" if s is None else
                f"ROUGE-1/2/L F1 = {s['rouge1']:.2f}/{s['rouge2']:.2f}/{s['rougeL']:.2f} "
                f"({len(refs)} summaries")
        if left_out:
            text += (f"; {len(left_out)} left out, reference without a word: "
                     f"first T- line {left_out[0]!r}")
        return text + ")"


if "rouge" not in SCORER_REGISTRY:
    register_scorer("rouge", dataclass=RougeScorerConfig)(RougeScorer)
