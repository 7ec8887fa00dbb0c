"""Compile tests/nvml/fake_nvml.c into a libnvidia-ml.so.1 and load it into the real nvidia-ml-py."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("fake_nvml.c")


def compile_fake(out_dir: Path, minimal: bool = False) -> Path:
    """gcc -shared -fPIC: the full fake, or (minimal) one without the optional functions."""
    if shutil.which("gcc") is None:
        raise RuntimeError("gcc is needed to build the fake NVML")
    out_dir.mkdir(parents=True, exist_ok=True)
    lib = out_dir / "libnvidia-ml.so.1"
    cmd = ["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", str(lib), str(SOURCE)]
    if minimal:
        cmd.insert(1, "-DFAKE_MINIMAL")
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    return lib


def use(lib: Path | None) -> None:
    """Point pynvml at this library (None: unload, so the next init searches the system)."""
    import pynvml

    pynvml.nvmlLib = ctypes.CDLL(str(lib)) if lib else None
    pynvml._nvmlGetFunctionPointer_cache.clear()
