"""Data preparation for fairseq-sum-plugins: raw documents -> fairseq binarized data.

* :mod:`preprocess.prepare` -- the pipeline (``fairseq-sum-prepare``)
* :mod:`preprocess.aclsum_to_jsonl` -- ACLSum (paper body -> abstract) to JSONL
* :mod:`preprocess.xsum_to_jsonl` -- XSum (HF JSONL or the raw BBC extraction) to JSONL
"""
