"""The baselines every summarization table needs, beside the models: Lead-k, random extracts,
the greedy oracle and the generic summary (:mod:`.systems`, ``fairseq-sum-baselines``), their
committed extracts checked against the documents (:mod:`.extracts`), LexRank (:mod:`.lexrank`,
Mem2Mem Table 3) and a compare run's table of baselines and verdicts (:mod:`.table`)."""
