"""The metrics collector and the load probe against a REAL llama-server (llama.cpp) with a real
model (tests/peers/setup.sh builds it; a missing peer skips, or fails under LLM_DOCTOR_REQUIRE_PEERS).

Every bound here is generous and none depends on the machine's speed: on 2 cores shared with the
rest of the test run a token can take a second instead of 30 ms, and the test must still hold."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from llm_doctor.collect import load_probe, metrics
from llm_doctor.engine import load_checks, run_checks, select
from llm_doctor.facts import Facts
from llm_doctor.facts.host import HostFacts
from tests.peers.fixtures import LLAMA_ALIAS, Peer, clean_env, free_port, manifest_entry, running

pytestmark = pytest.mark.timeout(600)
KEY = "sk-llamacpp-metrics-1234"


@pytest.fixture(scope="module")
def one_slot_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    """llama-server with ONE slot (--parallel 1) and one CPU thread (see tests/peers/fixtures.py:
    ggml's spinning threads make -t 2 on 2 busy cores many times slower)."""
    server = manifest_entry("llama_server", "binary")
    model = manifest_entry("gemma_gguf", "path")
    work = tmp_path_factory.mktemp("llama-one-slot")
    port = free_port()
    cmd = [server["binary"], "-m", model["path"], "--alias", LLAMA_ALIAS, "--host", "127.0.0.1", "--port", str(port),
           "--api-key", KEY, "-c", "1024", "-t", "1", "--parallel", "1", "--metrics", "--no-webui"]
    peer = Peer(f"http://127.0.0.1:{port}", KEY, work / "llama-server.log", server["version"])
    with running(cmd, peer.origin + "/health", peer.log, work, clean_env(work)):
        yield peer


def test_real_llamacpp_metrics(one_slot_server: Peer) -> None:
    base = one_slot_server.origin
    httpx.post(base + "/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"}, timeout=300, trust_env=False,
               json={"model": LLAMA_ALIAS, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "temperature": 0})
    m = metrics.collect(base + "/metrics", KEY, sample_s=0.5, timeout=60)
    assert m.available and m.engine == "llamacpp"
    assert m.values["generation_tokens_total"] > 0 and m.raw["generation_tokens_total"].startswith("llamacpp:tokens_predicted_total")
    assert "running" in m.values and "generation_tokens_per_s" in m.values
    denied = metrics.collect(base + "/metrics", None, sample_s=0, timeout=60)
    assert not denied.available and "401" in denied.reason


def test_real_llamacpp_one_slot_serialises(one_slot_server: Peer, monkeypatch: pytest.MonkeyPatch) -> None:
    # The probe's 10 s bound is for users; here every request must finish however slow the machine
    # is, so the measurement, not the clock, decides.
    monkeypatch.setattr(load_probe, "MAX_SECONDS", 300.0)
    r = load_probe.probe(one_slot_server.v1, KEY, LLAMA_ALIAS, 4)
    assert (r.errors, r.requests, r.server_hint, r.slots) == (0, 6, "llamacpp", 1), r
    assert r.tps_1 and r.tps_n, r
    facts = Facts(host=HostFacts(probe=r))
    res = next(r for r in run_checks(facts, select(load_checks(), ["perf.batching"])) if r.id == "perf.batching")
    (finding,) = res.findings
    assert finding.code == "perf.batching_limited" and finding.fixes[0].command == "--parallel 4", r
