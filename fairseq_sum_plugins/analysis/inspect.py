"""Moved to fairseq_sum_plugins.inspection.page.cli."""
from fairseq_sum_plugins.analysis import forward

forward(__spec__.name, __name__ == "__main__")
