"""Label pre-split sentences with a spaCy pipeline and write CoNLL-U (input of ``fairseq-sum-probe --labels``).

``fairseq-sum-probe --write-words FILE`` writes a split's summary words, one sentence per line, words
separated by spaces. This script keeps that tokenisation exactly (one spaCy ``Doc`` per line, built
from its words, never re-split) and writes one CoNLL-U sentence per line with UPOS, XPOS (PTB tags,
as the TP-Transformer paper's CoreNLP), HEAD and DEPREL, and the entity type of each word as ``NER=``
in MISC (``O`` outside entities)::

    python -m preprocess.spacy_conllu words.txt labels.conllu --model en_core_web_sm

It only needs spaCy and a pipeline, so it can run in another environment than the summarizer's (the
probe reads the file). An empty line is an error naming it: the probe aligns sentences one to one.
"""
import argparse
import os
import sys

from fairseq_sum_plugins.cli.outputs import refuse_clobber


def conllu_lines(doc):
    """The CoNLL-U lines (no trailing blank line) of one spaCy ``Doc``."""
    lines = []
    for tok in doc:
        head = 0 if tok.head.i == tok.i else tok.head.i + 1
        ner = tok.ent_type_ if tok.ent_type_ else "O"
        lines.append("\t".join([str(tok.i + 1), tok.text, tok.lemma_ or "_", tok.pos_ or "_", tok.tag_ or "_", "_",
                                str(head), tok.dep_ or "_", "_", f"NER={ner}"]))
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("words", help="one sentence per line, words separated by spaces (fairseq-sum-probe --write-words)")
    p.add_argument("out", help="CoNLL-U file to write")
    p.add_argument("--model", default="en_core_web_sm", help="an installed spaCy pipeline (name or path)")
    p.add_argument("--batch-size", type=int, default=64,
                   help="sentences per batch of spaCy's nlp.pipe (default: %(default)s)")
    args = p.parse_args(argv)
    refuse_clobber(p, reads=[("WORDS", args.words), ("--model", args.model if os.path.exists(args.model) else None)],
                   writes=[("OUT", args.out)], files=True)
    with open(args.words, encoding="utf-8") as f:
        sentences = [line.rstrip("\r\n") for line in f]
    for no, sent in enumerate(sentences, 1):
        if not sent.split():
            p.error(f"{args.words}:{no}: empty line (one sentence of words per line)")
    try:
        import spacy
        from spacy.tokens import Doc
    except ImportError:
        p.error("needs spaCy (pip install spacy) and a pipeline with a tagger and a parser")
    try:
        nlp = spacy.load(args.model)
    except OSError as e:
        p.error(f"--model {args.model}: {e}")
    docs = (Doc(nlp.vocab, words=s.split()) for s in sentences)
    with open(args.out, "w", encoding="utf-8") as out:
        for i, doc in enumerate(nlp.pipe(docs, batch_size=args.batch_size)):
            out.write(f"# sent_id = {i + 1}\n" + "\n".join(conllu_lines(doc)) + "\n\n")
    print(f"wrote {args.out}: {len(sentences)} sentences ({nlp.meta.get('name')} {nlp.meta.get('version')})",
          file=sys.stderr)


if __name__ == "__main__":
    main()
