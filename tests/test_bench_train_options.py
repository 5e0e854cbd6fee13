"""benchmarks/bench_train.py's --ablate compile: a compiled peer per arch (and of HF's T5) in the same run."""
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_train_options",
                                                  os.path.join(ROOT, "benchmarks", "bench_train.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ablate_compile_needs_a_warm_up_step_to_compile_in(monkeypatch, capsys):
    bench = load_bench()
    monkeypatch.setattr("sys.argv", ["bench_train.py", "--ablate", "compile", "--warmup-steps", "0"])
    with pytest.raises(SystemExit):
        bench.parse_args()
    assert "--ablate compile --warmup-steps 0: at least 1" in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", ["bench_train.py", "--ablate", "compile,packed_mask", "--warmup-steps", "1"])
    assert bench.parse_args().ablate == ["compile", "packed_mask"]


def test_the_compile_switch_compiles_every_layer_in_place():
    """The switch is off by default and compiles each encoder and decoder layer of the model it is given
    (the model's own --compile path: modules/compiled.py), leaving names and parameters unchanged."""
    from conftest import build_model

    bench = load_bench()
    model, _ = build_model("t5_small", encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2,
                           encoder_attention_heads=4, decoder_layers=2)
    names = [n for n, _ in model.named_parameters()]
    assert bench.FAST_PATHS["compile"]() is False
    bench.FAST_PATHS["compile"](model)
    layers = list(model.encoder.layers) + list(model.decoder.layers)
    assert all(layer._compiled_call_impl is not None for layer in layers)
    assert [n for n, _ in model.named_parameters()] == names
