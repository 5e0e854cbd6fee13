from . import sum_transformer  # noqa: F401
