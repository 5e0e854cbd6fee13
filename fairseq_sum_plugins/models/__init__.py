from . import sum_transformer  # noqa: F401
from . import mem2mem  # noqa: F401
from . import bart  # noqa: F401
