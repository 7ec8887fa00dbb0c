"""The CLI contract: commands, exit codes, formats, --output, bundles, and `--help` speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from llm_doctor.facts import Facts
from llm_doctor.facts.access import Setting, SettingsFacts
from tests.conftest import ROOT


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llm_doctor", *args], capture_output=True, text=True, input=stdin, timeout=120
    )


def test_help_and_version() -> None:
    out = cli("--help")
    assert out.returncode == 0 and "analyze" in out.stdout and "run" in out.stdout
    assert cli("--version").stdout.strip() == "llm-doctor, version 0.1.0"


def test_help_does_not_import_heavy_modules() -> None:
    code = "import sys; from llm_doctor import cli; print(sorted(m for m in ('httpx','rich','pynvml','psutil','prometheus_client','ray') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_usage_error_exits_2() -> None:
    assert cli("run", "--format", "yaml").returncode == 2
    assert cli("explain", "access.nope").returncode == 2


def test_explain_and_checks() -> None:
    out = cli("explain", "load.kv_cache_insufficient")
    assert out.returncode == 0
    assert "max model length needs more KV cache" in out.stdout
    listing = cli("checks")
    assert listing.returncode == 0


def test_analyze_bundle_round_trip(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.json"
    facts = Facts(settings=SettingsFacts(base_url=Setting("http://127.0.0.1:9/v1", "flag --base-url")))
    bundle.write_text(json.dumps(facts.to_dict()))
    report_file = tmp_path / "r.json"
    out = cli("analyze", str(bundle), "--format", "json", "--output", str(report_file), "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    report = json.loads(report_file.read_text())
    assert report["schema"] == "llm-doctor.report/1"
    assert report["facts"]["settings"]["base_url"]["value"] == "http://127.0.0.1:9/v1"


def test_missing_path_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    out = cli("analyze", str(tmp_path / "nope.log"), "--format", "markdown")
    assert "Traceback" not in out.stderr
    assert out.returncode == 2
    assert "nope.log: no such file" in out.stderr


def test_what_could_not_be_checked_is_skip_not_pass() -> None:
    """A lone crash log says nothing of the host CPU, clocks, prefix caching or memory headroom."""
    log = ROOT / "fixtures" / "logs" / "vllm-0.4.1-a10g-mistral7b-kv-cache-insufficient.log"
    out = cli("analyze", str(log), "--format", "json")
    status = {c["id"]: c["status"] for c in json.loads(out.stdout)["checks"]}
    for check_id in ("perf.host_cpu", "perf.clocks", "perf.prefix_cache", "perf.memory_headroom", "access.key"):
        assert status[check_id] in ("skip", "blocked"), check_id
    assert status["load.kv_cache"] == "fail"


def run_with_stderr_on_a_terminal(*args: str) -> tuple[int, str]:
    """`llm-doctor run ... > out` typed at a terminal: stderr is a real pty (so the live status
    line shows), stdout is a pipe. Returns (exit code, what reached stdout)."""
    import os
    import pty

    master, slave = pty.openpty()
    try:
        out = subprocess.run(
            [sys.executable, "-m", "llm_doctor", "run", *args],
            stdout=subprocess.PIPE,
            stderr=slave,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
    finally:
        os.close(slave)
        os.close(master)
    return out.returncode, out.stdout.decode()


RUN_REFUSED = ("--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--sample", "0.2", "--fail-on", "never")


def test_run_json_reaches_stdout_while_the_live_status_is_on_the_terminal() -> None:
    code, stdout = run_with_stderr_on_a_terminal(*RUN_REFUSED, "--format", "json")
    assert code == 0
    report = json.loads(stdout)
    assert report["schema"] == "llm-doctor.report/1"
    assert "access.connect_failed" in {f["code"] for f in report["findings"]}


def test_run_text_report_is_not_wrapped_at_80_columns_when_piped() -> None:
    code, stdout = run_with_stderr_on_a_terminal(*RUN_REFUSED, "--format", "text", "--verbose")  # a passed check's row too
    assert code == 0
    check_line = next(line for line in stdout.splitlines() if "access.key" in line)
    assert len(check_line) > 80  # one line per check, whole, however long its detail
    assert "access.connect_failed" in stdout
