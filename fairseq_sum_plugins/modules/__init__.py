from .attention import MultiheadAttention  # noqa: F401
from .tpr import TPRBinding  # noqa: F401
