"""The real `llm-doctor` against llama.cpp's llama-server serving a real model (Gemma-3-270M Q4_K_M):
real tokens, real OpenAI and Anthropic streaming, a real 401, and its real Prometheus /metrics
(`llamacpp:*`, behind the API key) read by the metrics collector; plus the load probe.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from llm_doctor.collect import metrics as metrics_collector
from tests.peers.fixtures import LLAMA_ALIAS, DoctorRun, Peer, access_run, doctor

pytestmark = pytest.mark.timeout(300)

WRONG_KEY = "sk-llmdoctor-wrong-llama-61c0ffee"


def no_secret(peer: Peer, run: DoctorRun, *more: str) -> DoctorRun:
    for secret in (peer.key, WRONG_KEY, *more):
        assert secret not in run.stdout, f"a key reached stdout:\n{run.stdout}"
        assert secret not in run.stderr, f"a key reached stderr:\n{run.stderr}"
    return run


def access(
    peer: Peer, home: Path, base: str, model: str = LLAMA_ALIAS, key: str | None = None, *extra: str
) -> DoctorRun:
    return access_run(peer, home, base, model, key, *extra, secrets=(WRONG_KEY,))


def check(run: DoctorRun, check_id: str) -> dict:
    return next(c for c in run.report["checks"] if c["id"] == check_id)


def step(run: DoctorRun, name: str) -> dict:
    return next(s for s in run.report["facts"]["endpoint"]["steps"] if s["step"] == name)


def generate(peer: Peer, max_tokens: int = 8) -> dict:
    """One real completion, so that the counters in /metrics are past zero."""
    body = {
        "model": LLAMA_ALIAS,
        "messages": [{"role": "user", "content": "Say hi."}],
        "max_tokens": max_tokens,
        "temperature": 0,
    }
    with httpx.Client(timeout=180, trust_env=False) as client:
        resp = client.post(
            peer.v1 + "/chat/completions", json=body, headers={"Authorization": f"Bearer {peer.key}"}
        )
    resp.raise_for_status()
    return resp.json()


def test_healthy_openai_route_with_real_tokens_and_sse(llama_server: Peer, tmp_path: Path) -> None:
    run = access(llama_server, tmp_path, llama_server.v1)
    assert run.rc == 0, run.stdout[:3000]
    assert [f for f in run.findings if f["severity"] == "error"] == []
    for check_id in ("access.base_url", "access.key", "access.model", "access.request", "access.streaming"):
        assert check(run, check_id)["status"] == "pass", check(run, check_id)
    chat = step(run, "chat")
    assert chat["status"] == 200 and chat["detail"]["content_len"] > 0  # the model really wrote something
    assert '"owned_by":"llamacpp"' in step(run, "models")["body_excerpt"]
    assert "ended with data: [DONE]" in check(run, "access.streaming")["detail"]


def test_healthy_anthropic_route_streams_real_events(llama_server: Peer, tmp_path: Path) -> None:
    run = access(llama_server, tmp_path, llama_server.origin, LLAMA_ALIAS, None, "--protocol", "anthropic")
    assert run.rc == 0, run.stdout[:3000]
    assert check(run, "access.protocol")["detail"] == "anthropic routes answer"
    assert f"POST {llama_server.v1}/messages -> 200 message" in check(run, "access.request")["detail"]
    assert "ended with message_stop" in check(run, "access.streaming")["detail"]


def test_wrong_key_is_rejected(llama_server: Peer, tmp_path: Path) -> None:
    run = access(llama_server, tmp_path, llama_server.v1, key=WRONG_KEY)
    assert run.rc == 1
    first = run.findings[0]
    assert first["code"] == "access.key_rejected", run.codes()
    assert f"GET {llama_server.v1}/models -> 401 Invalid API Key" in first["evidence"]


def test_doubled_v1_gives_the_base_url_that_answered(llama_server: Peer, tmp_path: Path) -> None:
    run = access(llama_server, tmp_path, llama_server.origin + "/v1/v1")
    assert run.rc == 1
    first = run.findings[0]
    assert first["code"] == "access.base_url_invalid", run.codes()
    assert f"GET {llama_server.origin}/v1/v1/models -> 404 File Not Found" in first["evidence"]
    assert f"--base-url {llama_server.v1}" in [fix["command"] for fix in first["fixes"]]


def test_any_model_name_is_answered_but_flagged(llama_server: Peer, tmp_path: Path) -> None:
    """llama-server serves its one model under any name: a warning naming the real alias, not an error."""
    run = access(llama_server, tmp_path, llama_server.v1, model="gpt-4o")
    assert run.rc == 0
    first = run.findings[0]
    assert (first["code"], first["severity"]) == ("access.model_not_found", "warn")
    assert "--model gemma-tiny" in [fix["command"] for fix in first["fixes"]]
    assert "--alias gpt-4o" in [fix["command"] for fix in first["fixes"]]  # llama-server's flag, not vLLM's


def test_metrics_collector_reads_the_real_llamacpp_metrics(llama_server: Peer, tmp_path: Path) -> None:
    done = generate(llama_server)
    bundle = tmp_path / "bundle.json"
    args = ["run", "--only", "perf", "--base-url", llama_server.v1, "--api-key", llama_server.key,
            "--model", LLAMA_ALIAS, "--sample", "1", "--save-bundle", str(bundle)]  # fmt: skip
    run = no_secret(llama_server, doctor(args, tmp_path))
    assert run.rc in (0, 1), run.stderr
    saved = bundle.read_text()
    assert llama_server.key not in saved
    m = json.loads(saved)["metrics"]
    assert (m["available"], m["engine"], m["source"]) == (True, "llamacpp", llama_server.origin + "/metrics")
    values = m["values"]
    assert (
        values["prompt_tokens_total"] >= 1
        and values["generation_tokens_total"] >= done["usage"]["completion_tokens"]
    )
    assert m["raw"]["prompt_tokens_total"].startswith("llamacpp:prompt_tokens_total ")
    assert values["running"] == 0 and values["waiting"] == 0  # idle between requests
    assert m["window_s"] >= 1 and "generation_tokens_per_s" in values  # two scrapes, a rate between them


def test_metrics_without_the_key_say_why(llama_server: Peer) -> None:
    m = metrics_collector.collect(llama_server.origin + "/metrics", WRONG_KEY, sample_s=0, timeout=60)
    assert not m.available
    assert m.reason == (
        f"GET {llama_server.origin}/metrics answered HTTP 401 (the endpoint wants the API key as a bearer token)"
    )


def test_load_probe_gets_real_tokens_per_second(llama_server: Peer, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.json"
    args = ["run", "--only", "perf", "--base-url", llama_server.v1, "--api-key", llama_server.key,
            "--model", LLAMA_ALIAS, "--sample", "0", "--probe-load", "2", "--save-bundle", str(bundle)]  # fmt: skip
    run = no_secret(llama_server, doctor(args, tmp_path))
    assert run.rc in (0, 1), run.stderr
    probe = json.loads(bundle.read_text())["host"]["probe"]
    assert probe["concurrency"] == 2 and probe["requests"] == 4
    assert probe["server_hint"] == "llamacpp"  # llama-server's answers carry `timings`
    assert probe["tps_1"] > 0
    # The probe stops at its 10 s bound (a user's bound, not a test's): on 2 busy cores the last
    # requests may meet it, and then the probe must say so rather than report a number.
    if probe["errors"]:
        assert all(n == "probe time is up" or "Timeout" in n for n in probe["notes"]), probe["notes"]
    else:
        assert probe["tps_n"] > 0


def test_load_probe_does_not_ask_for_slots_the_server_already_has(llama_server: Peer, tmp_path: Path) -> None:
    """llama-server here runs 4 slots (its log says `n_slots = 4`, /props says total_slots 4) on one
    CPU thread: 2 concurrent requests cannot go much faster because the CPU is the limit, not the
    slots, so advising `--parallel 2` would lower the server's concurrency."""
    log = llama_server.log.read_text(errors="replace")
    assert "n_slots = 4" in log
    args = ["run", "--only", "perf", "--base-url", llama_server.v1, "--api-key", llama_server.key,
            "--model", LLAMA_ALIAS, "--sample", "0", "--probe-load", "2", "--log", str(llama_server.log)]  # fmt: skip
    run = no_secret(llama_server, doctor(args, tmp_path))
    advice = [fix["command"] or "" for f in run.findings for fix in f["fixes"]]
    too_few = [c for c in advice if c.startswith("--parallel ") and int(c.split()[1]) <= 4]
    assert too_few == [], f"asks for no more slots than the 4 it has: {too_few}"
    assert run.report["facts"]["host"]["probe"]["slots"] == 4  # read from GET /props total_slots
