"""The text report a person reads at 3 a.m.: findings and fixes first, passed and skipped checks
folded into a line per layer (all of them with --verbose), lines wrapped to the terminal's width on
a terminal and never hard-wrapped into a file or a pipe, and "No problems found." only when the
status is ok."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

from llm_doctor.engine import CheckResult
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix
from llm_doctor.redact import Redactor
from llm_doctor.report import build_report
from llm_doctor.report.render import render

ROOT = Path(__file__).resolve().parents[1]
KV_LOG = ROOT / "fixtures/logs/vllm-v1-kv-cache-needed-gib.log"
LOG_LINE = open(KV_LOG, encoding="utf-8").read().strip()  # one line of 400 characters


def sample() -> list[CheckResult]:
    refused = Finding("access.connect_failed", "the TCP connection to 127.0.0.1:9 was refused",
                      ["connect 127.0.0.1:9: ConnectionRefusedError"], [Fix("Check that the server listens on port 9", "curl -sS http://127.0.0.1:9/v1/models")],
                      severity="error")  # fmt: skip
    return [
        CheckResult("access.key", "access", "pass", 0, "no key configured"),
        CheckResult("access.model", "access", "skip", 0, "no endpoint facts"),
        CheckResult("access.network", "access", "fail", 0, "the TCP connection was refused", [refused]),
        CheckResult("access.request", "access", "blocked", 0, "blocked: access.network fail"),
        CheckResult("load.cuda", "load", "pass", 0, "no CUDA/driver mismatch in the log"),
        CheckResult("load.shm", "load", "pass", 0, "no /dev/shm failure in the log"),
    ]


def text(checks: list[CheckResult], **kw: object) -> str:
    return render(build_report(checks, Facts()), "text", Redactor(), **kw)  # type: ignore[arg-type]


def test_findings_come_first_and_passed_or_skipped_checks_fold_per_layer() -> None:
    out = text(sample())
    lines = out.splitlines()
    assert out.index("1. ERROR access.connect_failed") < out.index("Checks")
    assert "access: 1 passed, 1 skipped" in lines and "load: 2 passed" in lines
    assert any(line.startswith("  ✗ fail    access.network") for line in lines)
    assert any(line.startswith("  ~ blocked access.request") for line in lines)
    assert "access.key" not in out and "load.cuda" not in out and "No problems found." not in out


def test_verbose_lists_every_check() -> None:
    out = text(sample(), verbose=True)
    for check in ("access.key", "access.model", "load.cuda", "load.shm"):
        assert f" {check} " in out
    assert "access: 1 passed" not in out


def test_no_all_clear_unless_the_status_is_ok() -> None:
    assert "No problems found." in text(sample()[:2])
    warned = [CheckResult("perf.x", "perf", "warn", 0, "", [Finding("perf.low_gpu_util", "GPUs idle", severity="warn")])]
    assert "No problems found." not in text(warned)
    gap = Finding("doctor.input_incomplete", "the log was cut at 5 MB", severity="info")
    out = text([CheckResult("doctor.inputs", "doctor", "warn", 0, "", [gap])])
    assert "status: incomplete" in out and "No problems found." not in out


def test_verbose_option_of_analyze() -> None:
    def analyze(*flags: str) -> str:
        return subprocess.run([sys.executable, "-m", "llm_doctor", "analyze", str(KV_LOG), *flags],
                              capture_output=True, text=True, timeout=120).stdout  # fmt: skip

    assert " load.cuda " not in analyze() and " load.cuda " in analyze("--verbose") and " load.cuda " in analyze("-v")


def test_a_pipe_gets_whole_lines() -> None:
    """Into a file or a pipe, a 400-character log line stays one line: grep and copy-paste work."""
    out = subprocess.run([sys.executable, "-m", "llm_doctor", "run", "--log", str(KV_LOG), "--only", "load", "--deadline", "60"],
                         capture_output=True, text=True, timeout=120).stdout  # fmt: skip
    assert f"     | {KV_LOG}:1: {LOG_LINE}" in out.splitlines()


def test_a_terminal_gets_lines_wrapped_to_its_width_with_hanging_indents() -> None:
    """On a 72-column terminal no line is wider than 72, and a wrapped evidence line continues
    under its text, not under its `|` mark."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 72, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, "-m", "llm_doctor", "analyze", str(KV_LOG)], stdout=follower, stderr=subprocess.DEVNULL,
                            env={**env, "NO_COLOR": "1"})  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert proc.wait(timeout=120) == 1
    os.close(leader)
    lines = b"".join(chunks).decode().replace("\r\n", "\n").splitlines()
    assert max(len(line) for line in lines) <= 72
    start = next(i for i, line in enumerate(lines) if line.startswith(f"     | {KV_LOG}"[:20]))
    assert lines[start + 1].startswith("       ") and not lines[start + 1].startswith("        ")
    words = " ".join(line.strip().removeprefix("| ") for line in lines[start:start + 12])
    assert "Try increasing `gpu_memory_utilization` or decreasing `max_model_len`" in words


def test_the_cluster_table_marks_the_odd_values_in_text_and_markdown() -> None:
    from llm_doctor.facts.cluster import ClusterFacts, NodeFacts

    nodes = [NodeFacts(node_id=n * 8, ip=f"10.0.0.{n}", resources={"GPU": 8.0}, versions={"vllm": v, "torch": "2.7.1"})
             for n, v in (("1", "0.10.1"), ("2", "0.10.1"), ("3", "0.9.2"))]  # fmt: skip
    report = build_report([], Facts(cluster=ClusterFacts(address="10.0.0.1:6379", nodes={n.node_id: n for n in nodes})))
    plain = render(report, "text", Redactor()).splitlines()
    vllm = [line.split()[4] for line in plain if line.startswith("10.0.0.")]  # node, id, GPUs, (no driver), vllm
    assert vllm == ["0.10.1", "0.10.1", "0.9.2*"]
    assert "\x1b[1;33m0.9.2*" in render(report, "text", Redactor(), color=True)  # bold on a terminal
    md = render(report, "markdown", Redactor()).splitlines()
    assert "| 10.0.0.3 node 33333333 | 8/? |  | **0.9.2** | 2.7.1 | - | - | - |  | - |  |" in md
    assert "| 10.0.0.1 node 11111111 | 8/? |  | 0.10.1 | 2.7.1 | - | - | - |  | - |  |" in md
