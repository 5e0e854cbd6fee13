"""Which of ATen's CPU kernel paths (``ATEN_CPU_CAPABILITY=default|avx2|avx512``) this CPU runs.

Asked for a path by the variable, torch reports it whether the CPU has it or not (an AVX2-only
AMD EPYC reports ``AVX512`` under ``ATEN_CPU_CAPABILITY=avx512``, and the first AVX-512 kernel
then dies with SIGILL), so a test that runs a path decides from what the CPU offers: the flags of
``/proc/cpuinfo`` that ATen itself requires for the path (``compute_cpu_capability`` in
aten/src/ATen/native/DispatchStub.cpp: AVX2 and FMA3; AVX-512 VL, BW, DQ and FMA3), else, where
there is no such file or flags line (another OS, another architecture), the capability torch picks
in a subprocess without the variable (a path is there when it is at most that one).
"""
import os
import subprocess
import sys

CPUINFO = "/proc/cpuinfo"
PATHS = ("default", "avx2", "avx512")  # in order: a CPU that runs one runs those before it
NEEDS = {"default": (), "avx2": ("avx2", "fma"),
         "avx512": ("avx512vl", "avx512bw", "avx512dq", "fma")}


def cpu_flags(cpuinfo=CPUINFO):
    """The x86 feature flags of the first ``flags`` line of ``cpuinfo``; None when it cannot be
    read or has no such line."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip() == "flags":
                    return set(value.split())
    except OSError:
        return None
    return None


def torch_capability():
    """The kernel path torch picks on this CPU by itself (``default``, ``avx2``, ``avx512``, ...),
    from a subprocess whose environment has no ``ATEN_CPU_CAPABILITY``."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    proc = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        capture_output=True, text=True, env=env, check=True)
    return proc.stdout.strip().lower()


def kernel_path_available(path, cpuinfo=CPUINFO, capability=torch_capability):
    """Whether this CPU runs ATen's kernel ``path`` (module docstring)."""
    if path not in NEEDS:
        raise ValueError(f"unknown kernel path {path!r} ({', '.join(PATHS)})")
    flags = cpu_flags(cpuinfo)
    if flags is not None:
        return all(flag in flags for flag in NEEDS[path])
    own = capability()
    return own in PATHS and PATHS.index(path) <= PATHS.index(own)
