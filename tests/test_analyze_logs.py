"""`llm-doctor analyze` end to end on logs: the README's first command, gzip, stdin, folders,
restarts, and bad input (empty, binary, missing) that must give a note, never a traceback."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "fixtures" / "logs"
KV_LOG = LOGS / "vllm-0.4.1-a10g-mistral7b-kv-cache-insufficient.log"


def analyze(*args: str, stdin: bytes | None = None) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "llm_doctor", "analyze", *args, "--format", "json"],
        input=stdin, capture_output=True, cwd=ROOT, timeout=60, env={**os.environ, "NO_COLOR": "1"},
    )
    assert "Traceback" not in proc.stderr.decode(), proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout), proc.stderr.decode()


def top(report: dict) -> dict:
    assert report["findings"], report["checks"]
    return report["findings"][0]


def test_readme_first_command() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "llm-doctor analyze fixtures/logs/vllm-0.4.1-a10g-mistral7b-kv-cache-insufficient.log" in readme
    rc, report, _ = analyze(str(KV_LOG.relative_to(ROOT)))
    assert rc == 1
    first = top(report)
    assert first["code"] == "load.kv_cache_insufficient"
    assert {"summary": "Lower the context length to what fits (16864 tokens)", "command": "--max-model-len 16864"} in first["fixes"]


def test_gzip_and_stdin_give_the_same_diagnosis(tmp_path: Path) -> None:
    gz = tmp_path / "engine.log.gz"
    gz.write_bytes(gzip.compress(KV_LOG.read_bytes()))
    _, from_gz, _ = analyze(str(gz))
    _, from_stdin, _ = analyze("-", stdin=KV_LOG.read_bytes())
    assert top(from_gz)["code"] == top(from_stdin)["code"] == "load.kv_cache_insufficient"
    assert top(from_gz)["fixes"][0]["command"] == top(from_stdin)["fixes"][0]["command"] == "--max-model-len 16864"


def test_folder_with_restarts_judges_the_last_crash(tmp_path: Path) -> None:
    """Two real crashes in one log (an OOM start, then the KV-cache start): the last one is ranked first
    and the earlier one is mentioned."""
    oom = (LOGS / "vllm-mllama-tp4-profile-run-oom.log").read_bytes()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "engine.log").write_bytes(oom + b"\nINFO 05-03 18:07:00 api_server.py:151] vLLM API server version 0.4.1\n"
                                                  + KV_LOG.read_bytes())
    (tmp_path / "notes.md").write_text("not a log")
    _, report, _ = analyze(str(tmp_path))
    first = top(report)
    assert first["code"] == "load.kv_cache_insufficient"
    assert any("earlier failed start(s) 1 showed: cuda_oom" in line for line in first["evidence"]), first["evidence"]
    assert report["facts"]["logs"]["runs"] >= 2


def test_bad_files_in_a_folder_are_gaps_not_tracebacks(tmp_path: Path) -> None:
    """Files met in a folder that cannot be read in full make the report incomplete, and say why."""
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "core.log").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "cut.log.gz").write_bytes(gzip.compress(KV_LOG.read_bytes())[:300])
    rc, report, _ = analyze(str(tmp_path))
    notes = " | ".join(report["facts"]["notes"])
    assert "empty: nothing to read" in notes and "binary data" in notes and "truncated or unreadable" in notes
    assert report["status"] == "incomplete" and rc == 1
    (gap,) = [f for f in report["findings"] if f["code"] == "doctor.input_incomplete"]
    assert len(gap["evidence"]) == 3


def test_secrets_in_log_lines_are_masked(tmp_path: Path) -> None:
    log = tmp_path / "client.log"
    token = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmN"
    log.write_text(f"requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url https://huggingface.co/x token={token}\n")
    proc = subprocess.run([sys.executable, "-m", "llm_doctor", "analyze", str(log), "--format", "json"], capture_output=True, cwd=ROOT, timeout=60)
    assert token not in proc.stdout.decode()
    assert json.loads(proc.stdout)["findings"][0]["code"] == "load.model_files"


def test_command_line_quoted_in_the_log_becomes_deployment_facts(tmp_path: Path) -> None:
    """`vllm serve ... \\` pasted above a crash that printed no arguments: the TP size and the
    context length come from the command (doctor.engine_args.parse_command)."""
    log = tmp_path / "engine.log"
    log.write_text(
        "$ vllm serve meta-llama/Llama-2-13b-hf \\\n"
        "    --tensor-parallel-size 3 --max-model-len 4096\n"
        "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).\n"
    )
    _, report, _ = analyze(str(log))
    deployment = report["facts"]["deployment"]
    assert deployment["tensor_parallel_size"] == 3 and deployment["max_model_len"] == 4096
    assert deployment["model"] == "meta-llama/Llama-2-13b-hf"
    first = top(report)
    assert first["code"] == "load.tp_invalid"
    assert "--tensor-parallel-size 2" in [f["command"] for f in first["fixes"]]
