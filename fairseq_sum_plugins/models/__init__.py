from . import sum_transformer  # noqa: F401
from . import mem2mem  # noqa: F401
from . import bart_gated  # noqa: F401
from . import bart_ta  # noqa: F401
