"""Checkpoint converters between this plugin and Hugging Face T5: ``fairseq-sum-import-t5``
(t5_import.py) and ``fairseq-sum-export-hf`` (t5_export.py). A converter reads and writes models;
no model imports a converter."""
