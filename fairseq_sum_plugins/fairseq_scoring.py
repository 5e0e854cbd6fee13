"""ROUGE as a ``fairseq-generate --scoring rouge`` scorer.

fairseq hands every scorer the detokenized target (the ``T-`` line) and hypothesis (``D-``) of
each test example through ``add_string``; this one cleans and scores them as
``fairseq-sum-score`` does (:func:`fairseq_sum_plugins.rouge.score_summaries`, default scorer)
and prints ``ROUGE-1/2/L F1`` in generate's closing ``Generate ... with beam=N:`` line. The
references are the binarized targets, so they are truncated where ``fairseq-sum-prepare
--max-tgt-tokens`` cut them: the reported numbers for papers come from ``fairseq-sum-score``,
which reads the untruncated references.
"""
from dataclasses import dataclass

from fairseq.dataclass import FairseqDataclass
from fairseq.scoring import SCORER_REGISTRY, BaseScorer, register_scorer


@dataclass
class RougeScorerConfig(FairseqDataclass):
    pass


class RougeScorer(BaseScorer):
    def score(self):
        """Summary-level ROUGE-1/2/L F1 (x100) of the strings added so far."""
        from .rouge import score_summaries

        if not self.ref:
            return {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
        res = score_summaries(self.pred, self.ref)
        return {m: 100 * res[m] for m in ("rouge1", "rouge2", "rougeL")}

    def result_string(self):
        s = self.score()
        return f"ROUGE-1/2/L F1 = {s['rouge1']:.2f}/{s['rouge2']:.2f}/{s['rougeL']:.2f} ({len(self.ref)} summaries)"


if "rouge" not in SCORER_REGISTRY:
    register_scorer("rouge", dataclass=RougeScorerConfig)(RougeScorer)
