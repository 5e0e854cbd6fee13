"""The page of ``fairseq-sum-inspect``: its command line (:mod:`.cli`), the HTML it writes
(:mod:`.render`) and the page's script, style and layer legends as package data (``assets/``)."""
