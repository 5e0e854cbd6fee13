"""Building blocks the backbones share: the feature interface (features.py) and its loading order
(registry.py), attention, the encoder-output contract, the T5 cell's parts, dropout, activation
checkpointing and regional compilation."""
from .attention import MultiheadAttention  # noqa: F401
