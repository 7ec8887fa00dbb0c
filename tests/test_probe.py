"""The opt-in load probe against a real local server whose concurrency limit we set:
one slot serialises requests (no scaling -> perf.batching_limited), eight slots scale."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator

import pytest

from llm_doctor.checks.perf.batching import SCALING_MIN
from llm_doctor.collect.load_probe import probe
from llm_doctor.engine import load_checks, run_checks, select
from llm_doctor.facts import Facts
from llm_doctor.facts.host import HostFacts

TOKENS = 16
STEP_S = 0.15


def serve(slots: int, step_s: float = STEP_S) -> tuple[http.server.ThreadingHTTPServer, str]:
    gate = threading.Semaphore(slots)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", 0))
            json.loads(self.rfile.read(length) or b"{}")
            if self.headers.get("Authorization") != "Bearer sk-probe-key":
                self.send_response(401)
                self.end_headers()
                return
            with gate:  # the server's own concurrency limit: requests beyond it wait
                time.sleep(step_s)
            body = json.dumps({"object": "chat.completion", "choices": [{"message": {"content": "1 2 3"}}],
                               "usage": {"completion_tokens": TOKENS}, "timings": {"predicted_n": TOKENS}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


@pytest.fixture
def one_slot() -> Iterator[str]:
    server, url = serve(1)
    yield url
    server.shutdown()


@pytest.fixture
def eight_slots() -> Iterator[str]:
    # a long step, so that the client's own per-request cost on two busy shared cores (threads, sockets,
    # JSON) stays small beside it and eight concurrent requests still show the server's parallelism
    server, url = serve(8, step_s=1.0)
    yield url
    server.shutdown()


def judge(result) -> list:
    facts = Facts(host=HostFacts(probe=result))
    res = next(r for r in run_checks(facts, select(load_checks(), ["perf.batching"])) if r.id == "perf.batching")
    return res.findings


def test_serialised_server_does_not_scale(one_slot):
    r = probe(one_slot, "sk-probe-key", "gemma-tiny", 4)
    assert r.errors == 0 and r.requests == 6 and r.server_hint == "llamacpp"
    assert r.tps_n / r.tps_1 < 1.5
    (finding,) = judge(r)
    assert finding.code == "perf.batching_limited" and "served one at a time" in finding.title
    assert finding.fixes[0].command == "--parallel 4"


def test_flat_probe_with_enough_slots_is_not_a_batching_limit(one_slot):
    """llama-server with 4 slots on a busy CPU: N requests are admitted, the compute is the limit."""
    r = probe(one_slot, "sk-probe-key", "gemma-tiny", 4)
    assert r.slots is None  # this fake has no /props
    r.slots = 4
    assert judge(r) == []


def test_batching_server_scales(eight_slots):
    r = probe(eight_slots, "sk-probe-key", "gemma-tiny", 8)
    assert r.errors == 0 and r.tps_n / r.tps_1 >= SCALING_MIN  # ideally 8; what the check calls "scales"
    assert judge(r) == []


def test_probe_is_bounded_and_reports_errors(one_slot):
    r = probe(one_slot, "wrong-key", None, 99)
    assert r.concurrency == 16  # capped
    assert r.tps_1 is None and r.errors == 2 and "HTTP 401" in r.notes


def test_run_with_probe_load_end_to_end(one_slot):
    import subprocess
    import sys
    from pathlib import Path

    out = subprocess.run(
        [sys.executable, "-m", "llm_doctor", "run", "--base-url", one_slot, "--api-key", "sk-probe-key", "--model", "gemma-tiny",
         "--probe-load", "4", "--sample", "0.3", "--only", "perf", "--format", "json"],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[1],
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["facts"]["host"]["probe"]["concurrency"] == 4
    top = report["findings"][0]
    assert top["code"] == "perf.batching_limited" and top["fixes"][0]["command"] == "--parallel 4"
    assert "sk-probe-key" not in out.stdout
