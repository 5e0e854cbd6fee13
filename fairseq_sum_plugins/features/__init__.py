"""The papers' mechanisms, each a :class:`~fairseq_sum_plugins.modules.features.FeatureSpec` that
every backbone (the default cell, the T5 cell, BART) hosts through the interface alone:

    tp_transformer.py          TP-Transformer: TPR role/filler binding (TPT eq. 3-8)
    information_selection.py   information selection: gate, gated cross-attention, pruning
                               (IS eq. 3-9)
    etads_focus.py             ETADS focus attention (ETADS eq. 5-8)
    etads_saliency.py          ETADS saliency selection (ETADS eq. 9-10)
    topic_assistant/           Topic Assistant: SIA, TEMA, DRM and the topic model they read
                               (TA eq. 1-9)
    copy_mechanism.py          See et al.'s pointer-generator over the last cross-attention

They are loaded in one fixed order by :func:`fairseq_sum_plugins.modules.registry.load_features`.
"""
