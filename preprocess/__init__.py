"""Data preparation for fairseq-sum-plugins: raw documents -> fairseq binarized data.

* :mod:`preprocess.prepare` -- the pipeline (``fairseq-sum-prepare``)
* :mod:`preprocess.aclsum_to_jsonl` -- ACLSum (paper body -> abstract) to JSONL
* :mod:`preprocess.xsum_to_jsonl` -- XSum (HF JSONL or the raw BBC extraction) to JSONL
* :mod:`preprocess.cnndm_to_jsonl` -- CNN / Daily Mail (HF JSONL or .story files + url lists)
* :mod:`preprocess.arxiv_pubmed_to_jsonl` -- arXiv / PubMed (Cohan et al. JSONL, sections kept)
* :mod:`preprocess.newsroom_to_jsonl` -- Newsroom (release JSONL, density-bin filter)
* :mod:`preprocess.wikihow_to_jsonl` -- WikiHow (``wikihowAll.csv``, official title lists)
* :mod:`preprocess.nyt_to_jsonl` -- NYT Annotated Corpus (JSONL extracted from the licensed data)
* :mod:`preprocess.stats` -- corpus statistics beside the papers' figures, the papers' truncations
* :mod:`preprocess.gpt2_bpe` -- GPT-2 BPE encoding of the JSONL for fine-tuning fairseq's BART
* :mod:`preprocess.topic_model` -- fits the Topic Assistant's PFA topic model and writes theta side data
  (its runtime part is :mod:`fairseq_sum_plugins.features.topic_assistant.topic_model`)
"""
