"""Fingerprints of a run (ledger/fingerprint.py) and recipes/aclsum/cross_cpu.sh,
which compares them across CPU models."""
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from ledger import fingerprint as fpm

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the header MKL 2024.2 prints under QEMU's Haswell, and on an AMD CPU in its CNR COMPATIBLE mode
MKL_INTEL = ("MKL_VERBOSE oneMKL 2024.0 Update 2 Product build 20240605 for Intel(R) 64 architecture Intel(R) "
             "Advanced Vector Extensions 2 (Intel(R) AVX2) enabled processors, Lnx 2.60GHz lp64 gnu_thread\n"
             "MKL_VERBOSE SGEMM(N,N,2,2,2,0x1,0x2,2,0x3,2,0x4,0x5,2) 16.44ms CNR:OFF Dyn:1 FastMM:1 TID:0  NThr:1\n")
MKL_AMD_CNR = ("MKL_VERBOSE oneMKL 2024.0 Update 2 Product build 20240605 for Intel(R) 64 architecture Intel(R) "
               "Architecture processors, Lnx 2.60GHz lp64 gnu_thread\n"
               "MKL_VERBOSE SGEMM(N,N,2,2,2,0x1,0x2,2,0x3,2,0x4,0x5,2) 2.81ms CNR:COMPATIBLE,STRICT Dyn:1 FastMM:1 TID:0  NThr:1\n")


def test_params_fingerprint_is_sha256_of_name_dtype_shape_and_bytes_in_name_order():
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([[3]], dtype=torch.int64)
    h = hashlib.sha256()
    for name, t in (("a", a), ("b", b)):
        h.update(f"{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode() + t.numpy().tobytes())
    assert fpm.params_fingerprint({"b": b, "a": a}) == h.hexdigest()


def test_scalar_and_bfloat16_tensors_are_fingerprinted_by_their_bytes():
    """A 0-dim parameter (a learned scale) and a bfloat16 one: torch cannot view either as bytes directly."""
    scale, half = torch.tensor(0.5), torch.tensor([1.0, -2.0], dtype=torch.bfloat16)
    h = hashlib.sha256()
    h.update(b"half\0torch.bfloat16\0(2,)\0" + half.view(torch.int16).numpy().tobytes())
    h.update(b"scale\0torch.float32\0()\0" + scale.numpy().tobytes())
    assert fpm.params_fingerprint({"scale": scale, "half": half}) == h.hexdigest()
    assert fpm.state_fingerprint({"step": torch.tensor(3.0)}) != fpm.state_fingerprint({"step": torch.tensor(4.0)})


def test_one_ulp_in_one_parameter_changes_the_params_fingerprint():
    state = {"w": torch.linspace(-1, 1, 50), "b": torch.zeros(3)}
    nudged = dict(state, w=state["w"].clone())
    nudged["w"][17] = torch.nextafter(nudged["w"][17], torch.tensor(2.0))
    assert fpm.params_fingerprint(state) != fpm.params_fingerprint(nudged)
    # the same bytes as another dtype or shape are another tensor
    assert fpm.params_fingerprint({"w": torch.zeros(4)}) != fpm.params_fingerprint({"w": torch.zeros(4, dtype=torch.int32)})
    assert fpm.params_fingerprint({"w": torch.zeros(4)}) != fpm.params_fingerprint({"w": torch.zeros(2, 2)})


def test_state_fingerprint_sees_every_bit_of_a_nested_optimizer_state():
    state = {"state": {0: {"exp_avg": torch.tensor([1e-3, -2e-3]), "step": 1}}, "param_groups": [{"lr": [2e-3]}]}
    same = {"param_groups": [{"lr": [2e-3]}], "state": {0: {"step": 1, "exp_avg": torch.tensor([1e-3, -2e-3])}}}
    assert fpm.state_fingerprint(state) == fpm.state_fingerprint(same)  # key order does not count
    nudged = {**state, "state": {0: {"exp_avg": torch.tensor([1e-3, -2e-3]), "step": 1}}}
    nudged["state"][0]["exp_avg"][1] = torch.nextafter(torch.tensor(-2e-3), torch.tensor(0.0))
    assert fpm.state_fingerprint(state) != fpm.state_fingerprint(nudged)
    assert fpm.state_fingerprint({"a": [1, 2]}) != fpm.state_fingerprint({"a": [[1], 2]})
    assert fpm.state_fingerprint(None) is None


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


GEN = "S-1\tsrc one\nH-1\t-0.5012\tthe first\nD-1\t-0.5012\tthe first\nS-0\tsrc zero\nH-0\t-0.2500\tthe zeroth\n"


def test_hypotheses_fingerprint_reads_h_lines_in_sample_order_with_their_scores(tmp_path):
    digest, n = fpm.hypotheses_fingerprint(write(tmp_path / "a.out", GEN))
    assert n == 2
    assert digest == hashlib.sha256(b"H-0\t-0.2500\tthe zeroth\nH-1\t-0.5012\tthe first\n").hexdigest()
    # batches finishing in another order: the same fingerprint; another score: another
    reordered = "H-0\t-0.2500\tthe zeroth\nH-1\t-0.5012\tthe first\n"
    assert fpm.hypotheses_fingerprint(write(tmp_path / "b.out", reordered))[0] == digest
    rescored = GEN.replace("-0.5012", "-0.5013")
    assert fpm.hypotheses_fingerprint(write(tmp_path / "c.out", rescored))[0] != digest


def test_hypotheses_fingerprint_refuses_nbest_and_non_generate_files(tmp_path):
    with pytest.raises(ValueError, match=r"d.out:2: a second H- line for sample 0"):
        fpm.hypotheses_fingerprint(write(tmp_path / "d.out", "H-0\t-1\ta\nH-0\t-2\tb\n"))
    with pytest.raises(ValueError, match="no H- lines"):
        fpm.hypotheses_fingerprint(write(tmp_path / "e.out", "just text\n"))


def test_code_paths_reads_aten_capability_and_mkl_header():
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "code_paths.txt")
        with open(p, "w") as f:
            f.write("ATen AVX2\n" + MKL_INTEL)
        assert fpm.code_paths(p) == {"aten": "AVX2", "mkl": "Advanced Vector Extensions 2 (AVX2) enabled processors",
                                     "cnr": "OFF"}
        with open(p, "w") as f:
            f.write("ATen DEFAULT\n" + MKL_AMD_CNR)
        assert fpm.code_paths(p) == {"aten": "DEFAULT", "mkl": "Architecture processors", "cnr": "COMPATIBLE,STRICT"}
    assert fpm.code_paths("/nonexistent/code_paths.txt") == {"aten": "?", "mkl": "?", "cnr": "?"}


def fake_run(root, pinned, cpu, params, hyps="h" * 64, paths="ATen DEFAULT\n" + MKL_AMD_CNR, opt="o" * 64):
    d = root / f"pinned{pinned}" / cpu
    write(d / "fingerprint.json", json.dumps({"params": params, "tensors": 3, "optimizer": opt, "hypotheses": hyps,
                                              "decoded": 5}))
    write(d / "code_paths.txt", paths)


def test_compare_says_which_cpu_models_computed_the_host_bits(tmp_path):
    fake_run(tmp_path, 1, "host", "a" * 64)
    fake_run(tmp_path, 1, "Haswell-v4", "a" * 64, paths="ATen DEFAULT\n" + MKL_INTEL)
    fake_run(tmp_path, 1, "EPYC-Rome-v1", "a" * 64)
    fake_run(tmp_path, 1, "SandyBridge-v1", "a" * 64, opt="p" * 64)  # same parameters, another gradient
    fake_run(tmp_path, 0, "host", "b" * 64, paths="ATen AVX512\n" + MKL_AMD_CNR)
    fake_run(tmp_path, 0, "Haswell-v4", "c" * 64, paths="ATen AVX2\n" + MKL_INTEL)
    fake_run(tmp_path, 0, "EPYC-Rome-v1", "b" * 64, hyps="i" * 64)  # same parameters, other decodings
    rows, verdict = fpm.compare_runs(str(tmp_path))
    assert [(r["pinned"], r["cpu"], r["same_as_host"]) for r in rows] == [
        (1, "host", True), (1, "EPYC-Rome-v1", True), (1, "Haswell-v4", True), (1, "SandyBridge-v1", False),
        (0, "host", True), (0, "EPYC-Rome-v1", False), (0, "Haswell-v4", False)]
    assert not verdict[1]["all_equal"] and not verdict[0]["all_equal"]
    table = fpm._compare_table(rows, verdict)
    assert "PINNED=1 (pinned arithmetic): 4 CPU models, NOT all the same bits" in table
    assert "PINNED=0 (as torch picks for the CPU): 3 CPU models, NOT all the same bits" in table
    assert "| 0 | Haswell-v4 | AVX2 | Advanced Vector Extensions 2 (AVX2) enabled processors | OFF | cccccccccccc | oooooooooooo |" in table


def test_compare_needs_a_host_run_and_says_which_folder(tmp_path):
    fake_run(tmp_path, 1, "Haswell-v4", "a" * 64)
    with pytest.raises(ValueError, match="pinned1: no host run"):
        fpm.compare_runs(str(tmp_path))
    with pytest.raises(ValueError, match="no pinned0/ or pinned1/ run"):
        fpm.compare_runs(str(tmp_path / "empty"))


def run_cli(*args):
    """fingerprint's CLI in this process: a CompletedProcess-like (returncode, stdout, stderr)."""
    import contextlib
    import io
    import types

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = fpm.cli_main(list(args))
        except SystemExit as e:
            code = e.code
    return types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def test_the_cli_wants_one_of_path_or_compare_and_names_a_missing_checkpoint(tmp_path):
    for args in ([], ["--path", "x.pt", "--compare", str(tmp_path)]):
        proc = run_cli(*args)
        assert proc.returncode == 2 and "give one of --path CKPT or --compare DIR" in proc.stderr
    proc = run_cli("--path", str(tmp_path / "missing.pt"))
    assert proc.returncode == 2 and "missing.pt: no such checkpoint" in proc.stderr


def test_the_cli_fingerprints_a_saved_checkpoint(tmp_path):
    state = {"model": {"w": torch.arange(6.0).view(2, 3)}, "args": None}
    torch.save(state, tmp_path / "c.pt")
    write(tmp_path / "g.out", GEN)
    proc = run_cli("--path", str(tmp_path / "c.pt"), "--generate-output", str(tmp_path / "g.out"),
                   "--json", str(tmp_path / "f.json"))
    assert proc.returncode == 0, proc.stderr
    got = json.loads((tmp_path / "f.json").read_text())
    assert got == {"params": fpm.params_fingerprint(state["model"]), "tensors": 1, "optimizer": None,
                   "hypotheses": fpm.hypotheses_fingerprint(str(tmp_path / "g.out"))[0], "decoded": 2}
    for name, data in (("text.pt", b"hello\n"), ("cut.pt", (tmp_path / "c.pt").read_bytes()[:200])):
        (tmp_path / name).write_bytes(data)
        proc = run_cli("--path", str(tmp_path / name))
        assert proc.returncode == 2 and f"{name}: not a readable torch checkpoint" in proc.stderr, proc.stderr
    torch.save({"weights": {}}, tmp_path / "other.pt")
    proc = run_cli("--path", str(tmp_path / "other.pt"))
    assert proc.returncode == 2 and "not a fairseq checkpoint" in proc.stderr


def test_pin_arithmetic_takes_effect_in_this_torch():
    """recipes/common.sh pin_arithmetic: ATen runs its baseline kernels and MKL its CNR COMPATIBLE branch."""
    env = {k: v for k, v in os.environ.items() if k not in ("MKL_CBWR", "ATEN_CPU_CAPABILITY")}
    probe = ("import torch; print('ATen', torch.backends.cpu.get_cpu_capability()); "
             "torch.ones(2, 2) @ torch.ones(2, 2)")
    proc = subprocess.run(["bash", "-c", f'source recipes/common.sh; pin_arithmetic; MKL_VERBOSE=1 "{sys.executable}" -c "{probe}"'],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    paths = fpm.code_paths(write_tmp(proc.stdout))
    assert paths["aten"] == "DEFAULT" and paths["cnr"] == "COMPATIBLE,STRICT", proc.stdout


def write_tmp(text):
    import tempfile

    f = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    f.write(text)
    f.close()
    return f.name


@pytest.fixture(scope="module")
def tiny_quickstart_work(tmp_path_factory):
    """A prepared data folder (fairseq-sum-prepare; 24 / 4 / 4 examples, ~110 pieces)."""
    import corpora

    return corpora.prepared_jsonl_work(tmp_path_factory.mktemp("xcpu"))


def cross_cpu(work, out, **env):
    full = {k: v for k, v in os.environ.items()
            if k not in ("CPU_MODELS", "MODES", "UPDATES", "DOCS", "ARCH", "BEAM", "MKL_CBWR", "ATEN_CPU_CAPABILITY")}
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    full.update(env)
    return subprocess.run(["bash", os.path.join(REPO, "recipes", "aclsum", "cross_cpu.sh"), str(work), str(out)],
                          cwd=REPO, env=full, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_cross_cpu_fingerprints_both_modes_and_refuses_a_rerun_with_other_settings(tiny_quickstart_work, tmp_path):
    out = tmp_path / "xc"
    proc = cross_cpu(tiny_quickstart_work, out, CPU_MODELS="", MODES="1 0", UPDATES="1", DOCS="2")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    rows, verdict = fpm.compare_runs(str(out))
    assert [(r["pinned"], r["cpu"]) for r in rows] == [(1, "host"), (0, "host")]
    assert rows[0]["aten"] == "DEFAULT" and rows[0]["cnr"] == "COMPATIBLE,STRICT"
    assert rows[1]["aten"] != "DEFAULT" and rows[1]["cnr"] == "OFF"
    assert all(r["decoded"] == 2 for r in rows)
    assert "PINNED=1 (pinned arithmetic): 1 CPU models, every one computed the same bits" in proc.stdout
    # the same settings again: every run skipped; other settings in the same folder: refused
    again = cross_cpu(tiny_quickstart_work, out, CPU_MODELS="", MODES="1 0", UPDATES="1", DOCS="2")
    assert again.returncode == 0 and again.stdout.count("done, skipped") == 2, again.stdout
    other = cross_cpu(tiny_quickstart_work, out, CPU_MODELS="", MODES="1", UPDATES="2", DOCS="2")
    assert other.returncode == 2 and "data was made with UPDATES=1, this run has UPDATES=2" in other.stderr
    assert "FORCE=1" in other.stderr and "done, skipped" not in other.stdout
    # FORCE=1: the data and every run of the old settings made again or removed, none compared
    forced = cross_cpu(tiny_quickstart_work, out, CPU_MODELS="", MODES="1", UPDATES="2", DOCS="2", FORCE="1")
    assert forced.returncode == 0, (forced.stdout + forced.stderr)[-3000:]
    assert not (out / "pinned0").exists()
    assert [(r["pinned"], r["cpu"]) for r in fpm.compare_runs(str(out))[0]] == [(1, "host")]
    assert json.load(open(out / "pinned1" / "host" / "spec.json"))["fields"]["UPDATES"] == "2"


@pytest.mark.parametrize("env,message", [
    (dict(MODES="2"), "MODES must list 1 (pinned) and/or 0 (as torch picks), got '2'"),
    (dict(MODES=""), "MODES is empty"),
    (dict(UPDATES="0"), "UPDATES must be an integer >= 1, got 0"),
    (dict(DOCS="two"), "DOCS must be an integer >= 1, got 'two'"),
])
def test_cross_cpu_refuses_bad_settings_before_any_work(tiny_quickstart_work, tmp_path, env, message):
    proc = cross_cpu(tiny_quickstart_work, tmp_path / "xc", CPU_MODELS="", **env)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "xc").exists()


def test_cross_cpu_wants_a_prepared_folder_and_known_cpu_models(tmp_path, tiny_quickstart_work):
    proc = cross_cpu(tmp_path / "nothing", tmp_path / "xc", CPU_MODELS="")
    assert proc.returncode == 2 and "nothing/bin is not prepared: run bash recipes/aclsum/quickstart.sh" in proc.stderr
    if shutil.which("qemu-x86_64"):
        proc = cross_cpu(tiny_quickstart_work, tmp_path / "xc", CPU_MODELS="Pentium9")
        assert proc.returncode == 2 and "unknown CPU model 'Pentium9'" in proc.stderr
    else:
        proc = cross_cpu(tiny_quickstart_work, tmp_path / "xc", CPU_MODELS="Haswell-v4")
        assert proc.returncode == 2 and "needs qemu-x86_64" in proc.stderr


def test_head_data_keeps_the_first_n_test_examples_and_links_the_rest(tiny_quickstart_work, tmp_path):
    from fairseq.data import data_utils

    data = tiny_quickstart_work / "bin"
    assert fpm.head_data(str(data), str(tmp_path / "h"), 2) == 2
    for side in ("src", "tgt"):
        full = data_utils.load_indexed_dataset(str(data / f"test.src-tgt.{side}"), None, "mmap")
        head = data_utils.load_indexed_dataset(str(tmp_path / "h" / f"test.src-tgt.{side}"), None, "mmap")
        assert len(head) == 2 and all(torch.equal(head[i], full[i]) for i in range(2))
    refs = (data / "test.ref.jsonl").read_text().splitlines()
    assert (tmp_path / "h" / "test.ref.jsonl").read_text().splitlines() == refs[:2]
    assert os.path.islink(tmp_path / "h" / "train.src-tgt.src.bin") and os.path.islink(tmp_path / "h" / "dict.src.txt")
    assert fpm.head_data(str(data), str(tmp_path / "all"), 1000) == len(refs)
    with pytest.raises(ValueError, match="n must be >= 1"):
        fpm.head_data(str(data), str(tmp_path / "z"), 0)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no test.*.bin"):
        fpm.head_data(str(tmp_path / "h" / ".." / "empty"), str(tmp_path / "z"), 1)
    before = (data / "test.ref.jsonl").read_bytes()
    for out in (data, data / "head"):  # the copy over its data (or inside it) would replace its test split
        with pytest.raises(ValueError, match=f"OUT {out} (is|lies inside) DATA {data}, which this command reads"):
            fpm.head_data(str(data), str(out), 1)
    assert (data / "test.ref.jsonl").read_bytes() == before and not (data / "head").exists()
