"""fairseq-sum-plugins: abstractive-summarization papers as a fairseq ``--user-dir`` plugin.

Name, version (``fairseq_sum_plugins.__version__``), license and readme: pyproject.toml. The checkout's
``preprocess/`` folder (``python -m preprocess.prepare`` from the repository root) installs under the
namespaced name ``fairseq_sum_plugins_preprocess``: no generic top-level ``preprocess`` package in
site-packages.
"""
from setuptools import find_packages, setup

PREPROCESS = "fairseq_sum_plugins_preprocess"  # the installed name of preprocess/

setup(
    packages=find_packages(include=["fairseq_sum_plugins", "fairseq_sum_plugins.*"])
    + [PREPROCESS] + [f"{PREPROCESS}.{p}" for p in find_packages(where="preprocess")],
    package_dir={PREPROCESS: "preprocess"},
    package_data={"fairseq_sum_plugins.scoring": ["data/*.txt"],
                  "fairseq_sum_plugins.inspection.page": ["assets/*.js", "assets/*.css",
                                                          "assets/*.json"]},
    # fairseq and torch are deliberately not pinned here: a bare ``torch`` requirement pulls a CUDA
    # build and fairseq 0.12.2 does not build on Python 3.11. ``scripts/install.sh`` installs a
    # working pair (torch CPU + fairseq-fixed); on Python <= 3.10 upstream ``fairseq==0.12.2`` works.
    install_requires=[
        "numpy",
        "sentencepiece",
        "sacremoses",
        "rouge-score",
        "nltk",
        "tqdm",
    ],
    extras_require={
        "plots": ["matplotlib"],
        # --sentence-splitter pysbd (fairseq-sum-prepare, sum_moses, fairseq-sum-score)
        "sentences": ["pysbd"],
        # --hf-dataset (fairseq-sum-prepare) and the ACLSum quickstart corpus
        "data": ["aclsum", "datasets"],
        "test": ["pytest", "pytest-xdist"],
        "t5": ["transformers", "safetensors"],  # tests of fairseq-sum-import-t5 only
    },
    entry_points={
        "console_scripts": [
            "fairseq-sum-prepare = fairseq_sum_plugins_preprocess.prepare:cli_main",
            "fairseq-sum-score = fairseq_sum_plugins.scoring.score:cli_main",
            "fairseq-sum-roles = fairseq_sum_plugins.inspection.roles:cli_main",
            "fairseq-sum-compare = fairseq_sum_plugins.evaluation.compare:cli_main",
            "fairseq-sum-baselines = fairseq_sum_plugins.evaluation.baselines.systems:cli_main",
            "fairseq-sum-probe = fairseq_sum_plugins.inspection.probe:cli_main",
            "fairseq-sum-inspect = fairseq_sum_plugins.inspection.page.cli:cli_main",
            "fairseq-sum-import-t5 = fairseq_sum_plugins.convert.t5_import:cli_main",
            "fairseq-sum-export-hf = fairseq_sum_plugins.convert.t5_export:cli_main",
        ]
    },
)
