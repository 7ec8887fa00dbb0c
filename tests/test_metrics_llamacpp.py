"""The metrics collector and the load probe against a REAL llama-server (llama.cpp) with a real
model, when tests/peers/setup.sh has built it (peers.json); skipped otherwise."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from doctor.collect import metrics
from doctor.collect.load_probe import probe
from doctor.engine import load_checks, run_checks, select
from doctor.facts import Facts
from doctor.facts.host import HostFacts

PEERS = Path(os.environ.get("LLM_DOCTOR_PEERS", Path.home() / ".cache" / "llm-doctor-peers")) / "peers.json"
KEY = "sk-llamacpp-metrics-1234"


def _peers() -> dict:
    if not PEERS.exists():
        pytest.skip("llama-server not built (run tests/peers/setup.sh)")
    data = json.loads(PEERS.read_text())
    binary, model = data["llama_server"]["binary"], data["gemma_gguf"]["path"]
    if not (Path(binary).exists() and Path(model).exists()):
        pytest.skip("llama-server or its model is missing")
    return {"binary": binary, "model": model}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server():
    peers = _peers()
    port = _free_port()
    proc = subprocess.Popen(
        [peers["binary"], "-m", peers["model"], "--alias", "gemma-tiny", "--host", "127.0.0.1", "--port", str(port),
         "--api-key", KEY, "-c", "1024", "-t", "2", "--parallel", "1", "--metrics", "--no-webui"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        else:
            pytest.fail("llama-server did not become healthy")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_real_llamacpp_metrics(llama_server):
    httpx.post(llama_server + "/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"}, timeout=60,
               json={"model": "gemma-tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "temperature": 0})
    m = metrics.collect(llama_server + "/metrics", KEY, sample_s=0.5, timeout=10)
    assert m.available and m.engine == "llamacpp"
    assert m.values["generation_tokens_total"] > 0 and m.raw["generation_tokens_total"].startswith("llamacpp:tokens_predicted_total")
    assert "running" in m.values and "generation_tokens_per_s" in m.values
    denied = metrics.collect(llama_server + "/metrics", None, sample_s=0, timeout=10)
    assert not denied.available and "401" in denied.reason


def test_real_llamacpp_one_slot_serialises(llama_server):
    r = probe(llama_server + "/v1", KEY, "gemma-tiny", 4)
    # on a loaded 2-core machine the last requests may meet the probe's 10 s bound: those count as errors
    assert r.tps_1 and r.tps_n and r.server_hint == "llamacpp", r
    facts = Facts(host=HostFacts(probe=r))
    res = next(r for r in run_checks(facts, select(load_checks(), ["perf.batching"])) if r.id == "perf.batching")
    (finding,) = res.findings
    assert finding.code == "perf.batching_limited" and finding.fixes[0].command == "--parallel 4", r
