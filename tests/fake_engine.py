"""A real process with an engine's name and command line, as `ps` shows it: a sleeping Python
script called `vllm` or `llama-server`, for the tests of the host collector and its redaction."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def fake_engine(script: Path, args: list[str], env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """Start it, wait (at most 10 s) until the host collector lists it, and stop it at the end."""
    from llm_doctor.collect import host

    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(120)\n")
    script.chmod(0o755)
    proc = subprocess.Popen([str(script), *args], env=env)
    try:
        for _ in range(100):
            if any(p.pid == proc.pid for p in host.engine_processes()):
                break
            time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)
