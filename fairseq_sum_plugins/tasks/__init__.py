from . import summarization  # noqa: F401
