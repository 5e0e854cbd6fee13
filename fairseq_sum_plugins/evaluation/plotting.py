"""Helpers shared by the analysis figures: a headless pyplot, labels that do not overlap, and
sentencepiece pieces joined into whole words, GPT-2 ids (BART's dictionary) as pieces."""
import logging

WORD_START = "\u2581"


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display), matplotlib's debug logging off."""
    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


OFFSETS = ((3, 3), (3, -9), (-3, 3), (-3, -9), (0, 9), (0, -14), (9, -3), (-9, -3), (0, 18),
           (0, -23))


def place_labels(ax, points, labels, fontsize=7, offsets=OFFSETS, **kwargs):
    """Annotates ``points`` (data coordinates, in order of priority) with ``labels``, each at the
    first of ``offsets`` (points) where it overlaps no label placed before; a label with no free
    offset is left out. Call after the axes' limits and the figure's layout are final. Returns the
    number left out."""
    renderer = ax.figure.canvas.get_renderer()
    placed, skipped = [], 0
    for (x, y), label in zip(points, labels):
        for dx, dy in offsets:
            t = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points",
                            fontsize=fontsize,
                            ha="left" if dx > 0 else ("right" if dx < 0 else "center"), **kwargs)
            box = t.get_window_extent(renderer).expanded(1.05, 1.15)
            if not any(box.overlaps(b) for b in placed):
                placed.append(box)
                break
            t.remove()
        else:
            skipped += 1
    return skipped


def join_pieces(pieces, scores):
    """Sentencepiece ``pieces`` joined into words (a word starts at a piece with ``\u2581``), each
    with the maximum of its pieces' ``scores``. Symbols without any ``\u2581`` (word-level
    dictionaries, GPT-2 ids) are returned as they are."""
    if not any(p.startswith(WORD_START) for p in pieces):
        return list(pieces), list(scores)
    words, out = [], []
    for piece, score in zip(pieces, scores):
        if piece.startswith(WORD_START) or not words or piece.startswith("<"):
            words.append(piece.replace(WORD_START, ""))
            out.append(score)
        else:
            words[-1] += piece
            out[-1] = max(out[-1], score)
    return [w or "_" for w in words], out


def save(fig, path, dpi=120):
    """Lays out ``fig``, writes it to ``path`` and closes it."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)


def gpt2_pieces(tokens, encoder_json, vocab_bpe):
    """GPT-2 BPE ids (BART's dictionary symbols) as text pieces, a word start marked ``▁`` like
    sentencepiece's, so that :func:`~.plotting.join_pieces` joins them into words; other symbols
    are kept."""
    from fairseq.data.encoders.gpt2_bpe_utils import get_encoder

    bpe = get_encoder(encoder_json, vocab_bpe)
    out = []
    for t in tokens:
        if not (t.isdigit() and int(t) in bpe.decoder):
            out.append(t)
            continue
        text = bytearray(bpe.byte_decoder[c]
                         for c in bpe.decoder[int(t)]).decode("utf-8", errors="replace")
        out.append("▁" + text.strip() if text[:1].isspace() else text)
    return out
