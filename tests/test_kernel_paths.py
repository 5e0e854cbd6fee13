"""tests/kernel_paths.py: a kernel path is available when the CPU offers it, whatever
``ATEN_CPU_CAPABILITY`` makes torch report (an AVX2-only CPU under ``avx512`` reports AVX512 and
dies with SIGILL in the first AVX-512 kernel)."""
import pytest

from kernel_paths import PATHS, cpu_flags, kernel_path_available, torch_capability

COMMON = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2"
# an AVX2-only AMD EPYC (Zen 2), as its /proc/cpuinfo lists it
EPYC = COMMON + " ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology " \
    "nonstop_tsc cpuid extd_apicid aperfmperf pni pclmulqdq monitor ssse3 fma cx16 sse4_1 sse4_2 movbe " \
    "popcnt aes xsave avx f16c rdrand lahf_lm cmp_legacy svm extapic cr8_legacy abm sse4a misalignsse " \
    "3dnowprefetch osvw ibs skinit wdt tce topoext bmi1 avx2 smep bmi2 rdseed adx smap clflushopt clwb " \
    "sha_ni xsaveopt xsavec xgetbv1 xsaves"
SKYLAKE_X = EPYC.replace("avx2", "avx2 avx512f avx512dq avx512cd avx512bw avx512vl")


def cpuinfo(tmp_path, flags, key="flags"):
    path = tmp_path / "cpuinfo"
    cpu = ("processor\t: {n}\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B12\n"
           f"{key}\t\t: {flags}\n\n")
    path.write_text("".join(cpu.format(n=n) for n in range(2)))
    return str(path)


def never(*args):
    raise AssertionError("the cpuinfo flags decide: torch is not asked")


@pytest.mark.parametrize("flags,available", [
    (EPYC, {"default": True, "avx2": True, "avx512": False}),
    (SKYLAKE_X, {"default": True, "avx2": True, "avx512": True}),
    (COMMON, {"default": True, "avx2": False, "avx512": False}),
    # AVX-512F alone is not enough for ATen's AVX-512 path (it needs VL, BW and DQ)
    (EPYC.replace("avx2", "avx2 avx512f"), {"default": True, "avx2": True, "avx512": False}),
])
def test_the_cpus_flags_decide_each_path(tmp_path, flags, available):
    path = cpuinfo(tmp_path, flags)
    assert {p: kernel_path_available(p, path, never) for p in PATHS} == available


def test_the_variable_does_not_change_the_answer(tmp_path, monkeypatch):
    path = cpuinfo(tmp_path, EPYC)
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    assert not kernel_path_available("avx512", path, never)


@pytest.mark.parametrize("own,available", [
    ("avx2", {"default": True, "avx2": True, "avx512": False}),
    ("avx512", {"default": True, "avx2": True, "avx512": True}),
    ("default", {"default": True, "avx2": False, "avx512": False}),
    ("zvector", {"default": False, "avx2": False, "avx512": False}),  # not an x86 path
])
def test_without_flags_torchs_own_capability_decides(tmp_path, own, available):
    for path in (cpuinfo(tmp_path, "fp asimd evtstrm aes crc32", key="Features"),
                 str(tmp_path / "missing")):
        assert cpu_flags(path) is None
        assert {p: kernel_path_available(p, path, lambda: own) for p in PATHS} == available


def test_torchs_own_capability_is_asked_without_the_variable(monkeypatch):
    own = torch_capability()
    for forced in ("default", "avx2", "avx512"):
        monkeypatch.setenv("ATEN_CPU_CAPABILITY", forced)
        assert torch_capability() == own


def test_an_unknown_path_is_refused():
    with pytest.raises(ValueError, match="unknown kernel path 'avx'"):
        kernel_path_available("avx")


def test_this_cpu(tmp_path):
    """On this machine: the flags' answer and torch's own agree on every path."""
    if cpu_flags() is None:
        pytest.skip("no flags line in /proc/cpuinfo")
    own = torch_capability()
    assert [kernel_path_available(p) for p in PATHS] == [
        kernel_path_available(p, str(tmp_path / "missing"), lambda: own) for p in PATHS]
