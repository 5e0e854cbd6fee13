"""A tiny random Hugging Face T5 (v1.0) directory built offline: config, weights, sentencepiece."""
import os

TEXT = ("the cat sat on the mat . a dog ran in the park with a red ball . "
        "blue sky over the big city and the small river . news of the day in brief .").split(" . ")


def train_spm(path_prefix, vocab_size=60, sentences=None):
    """A unigram sentencepiece model with T5's special ids (pad 0, eos 1, unk 2, no bos)."""
    import sentencepiece as spm

    sents = list(sentences or [f"{a} {b}" for a in TEXT for b in TEXT] * 3)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sents), model_prefix=path_prefix, vocab_size=vocab_size, model_type="unigram",
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1, hard_vocab_limit=False, minloglevel=2, num_threads=1,
    )
    return path_prefix + ".model"


def write_tiny_t5(hf_dir, seed=0, sentences=None, vocab_size=60, untied_head=False, **config):
    """Saves a random ``T5ForConditionalGeneration`` (2+2 layers, d 32) with the installed transformers
    and its ``spiece.model`` (trained on ``sentences``, by default a few fixed ones); ``untied_head``:
    an ``lm_head`` of its own (transformers >= 5 ties it at build time whatever the config says)."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    os.makedirs(hf_dir, exist_ok=True)
    model_file = train_spm(os.path.join(hf_dir, "spiece"), vocab_size, sentences)
    import sentencepiece as spm

    n = spm.SentencePieceProcessor(model_file=model_file).get_piece_size()
    cfg = dict(vocab_size=n + 12, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
               relative_attention_num_buckets=8, relative_attention_max_distance=20, dropout_rate=0.0,
               feed_forward_proj="relu", pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    cfg.update(config)
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(T5Config(**cfg)).eval()
    if untied_head:
        model.lm_head.weight = torch.nn.Parameter(torch.randn_like(model.shared.weight))
    model.save_pretrained(hf_dir)
    return model
