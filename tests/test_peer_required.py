"""Peer tests without the peers: a plain `pytest` skips them and says how to set them up; with
LLM_DOCTOR_REQUIRE_PEERS (as .ci/run sets it) they fail, so CI cannot pass by testing nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_peer_test(peers_dir: Path, require: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LLM_DOCTOR_REQUIRE_PEERS"}
    env["LLM_DOCTOR_PEERS"] = str(peers_dir)
    if require:
        env["LLM_DOCTOR_REQUIRE_PEERS"] = "1"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-rs",
        "-p",
        "no:cacheprovider",
        "tests/test_peer_llama.py",
        "-k",
        "wrong_key",
    ]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_missing_peers_skip_with_the_setup_command(tmp_path: Path) -> None:
    proc = run_peer_test(tmp_path, require=False)
    assert proc.returncode == 0, proc.stdout
    assert "1 skipped" in proc.stdout
    assert f"no {tmp_path}/peers.json; run `bash tests/peers/setup.sh` first" in proc.stdout


def test_missing_peers_fail_when_required(tmp_path: Path) -> None:
    proc = run_peer_test(tmp_path, require=True)
    assert proc.returncode == 1, proc.stdout
    assert "1 error" in proc.stdout  # the fixture fails at setup
    assert "LLM_DOCTOR_REQUIRE_PEERS is set but no" in proc.stdout


def test_a_manifest_naming_a_missing_binary_is_missing_too(tmp_path: Path) -> None:
    (tmp_path / "peers.json").write_text(
        '{"llama_server": {"version": "0", "binary": "/nonexistent/llama-server"},'
        ' "gemma_gguf": {"version": "0", "path": "/nonexistent/model.gguf"}}'
    )
    proc = run_peer_test(tmp_path, require=False)
    assert proc.returncode == 0, proc.stdout
    assert "llama_server is not installed (binary='/nonexistent/llama-server'" in proc.stdout
