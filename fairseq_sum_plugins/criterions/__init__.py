from . import summarization_loss  # noqa: F401
