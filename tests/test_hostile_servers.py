"""Hostile servers against the installed CLI, the way an on-call engineer points it at the broken
thing: `llm-doctor run --timeout 2 --deadline 8`. Real sockets on 127.0.0.1 (tests/servers/hostile.py),
each server bounded in time. Each case asserts the exact finding, the exit code, and that the run
ended within --deadline plus a margin for interpreter start-up on a busy machine (never a speed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.servers import hostile
from tests.servers.http import FakeServer, Reply, Request
from tests.servers.openai_like import VllmLike

KEY = "sk-hostile-0123456789abcdefQRS"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
TIMEOUT_S, DEADLINE_S = 2, 8
MARGIN_S = 20  # interpreter start-up and imports on two busy shared cores, not the server's doing


def doctor(tmp_path: Path, url: str, *args: str) -> tuple[int, dict[str, Any], float]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "llm_doctor", "run", "--only", "access", "--format", "json", "--timeout", str(TIMEOUT_S),
           "--deadline", str(DEADLINE_S), "--base-url", url, "--api-key", KEY, "--model", MODEL, *args]  # fmt: skip
    start = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=DEADLINE_S + 60)
    elapsed = time.monotonic() - start
    assert "Traceback" not in out.stderr, out.stderr
    assert KEY not in out.stdout + out.stderr
    return out.returncode, json.loads(out.stdout), elapsed


def top(report: dict[str, Any]) -> dict[str, Any]:
    assert report["findings"], "no findings"
    return report["findings"][0]


def run_against(tmp_path: Path, behaviour: hostile.Behaviour, scheme: str = "http", read_request: bool = True) -> tuple[int, dict[str, Any], float]:
    with hostile.HostileServer(behaviour, read_request=read_request) as srv:
        rc, report, elapsed = doctor(tmp_path, srv.url(scheme) + "/v1")
    assert elapsed < DEADLINE_S + MARGIN_S, f"the run took {elapsed:.1f} s"
    return rc, report, elapsed


def test_trickled_headers_are_cut_by_the_wall_clock(tmp_path: Path) -> None:
    rc, report, _ = run_against(tmp_path, hostile.trickled_headers)
    f = top(report)
    assert rc == 1 and f["code"] == "access.timeout"
    assert f["title"] == f"the server accepted the connection but its status line and headers were not complete within {TIMEOUT_S} s"
    assert f["evidence"][0].endswith("(timeout 2 s): no complete answer within 2 s: still waiting for the status line and headers")
    assert "-> WallClockTimeout after 2." in f["evidence"][0]


def test_trickled_body_is_a_slow_server(tmp_path: Path) -> None:
    rc, report, _ = run_against(tmp_path, hostile.trickled_body)
    f = top(report)
    assert rc == 1 and f["code"] == "access.timeout"
    assert f["title"].startswith(f"the server is too slow: after {TIMEOUT_S} s only ")
    assert "bytes of the body (200) had arrived" in f["title"]


def test_a_megabyte_of_headers(tmp_path: Path) -> None:
    rc, report, _ = run_against(tmp_path, hostile.megabyte_of_headers)
    f = top(report)
    assert rc == 1 and f["code"] == "access.response_invalid"
    assert f["title"] == "the answer's status line and headers are over 100 KiB: not a sane HTTP answer"
    assert "RemoteProtocolError: Receive buffer too long" in f["evidence"][0]


def test_connection_closed_mid_body(tmp_path: Path) -> None:
    rc, report, _ = run_against(tmp_path, hostile.closed_mid_body)
    f = top(report)
    assert rc == 1 and f["code"] == "access.response_invalid"
    assert f["title"].startswith("the answer broke off: 200 and then RemoteProtocolError: peer closed connection")
    assert "received 100 bytes, expected 1000" in f["title"]


def test_bytes_that_are_not_http(tmp_path: Path) -> None:
    rc, report, _ = run_against(tmp_path, hostile.not_http)
    f = top(report)
    assert rc == 1 and f["code"] == "access.response_invalid"
    assert f["title"] == "the server does not speak HTTP on this port"
    assert "the server's first bytes: b'SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13.5\\r\\n'" in f["evidence"]


def test_json_nested_100000_deep(tmp_path: Path) -> None:
    rc, report, _ = run_against(tmp_path, hostile.deep_json)
    f = top(report)
    assert rc == 1 and f["code"] == "access.response_invalid"
    assert f["title"] == "the answer is not JSON: nested too deep to parse"
    assert "JSON parser: JSON nested too deep to parse" in f["evidence"]
    assert not any("probe failed" in n or "RecursionError" in n for n in report.get("notes", []))


def test_status_line_then_close_quotes_what_came(tmp_path: Path) -> None:
    rc, report, _ = run_against(tmp_path, hostile.status_line_then_close)
    f = top(report)
    assert rc == 1 and f["code"] == "access.response_invalid"
    assert f["title"] == "the answer is not valid HTTP: RemoteProtocolError: Server disconnected without sending a response."
    assert "the server's first bytes: b'HTTP/1.1 200 OK\\r\\n'" in f["evidence"]


def test_deadline_shorter_than_the_timeout_still_ends_the_run(tmp_path: Path) -> None:
    """The issue's case: --timeout 30 against a server trickling its headers; --deadline 5 wins."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    with hostile.HostileServer(hostile.trickled_headers) as srv:
        cmd = [sys.executable, "-m", "llm_doctor", "run", "--only", "access", "--format", "json", "--timeout", "30",
               "--deadline", "5", "--base-url", srv.url() + "/v1", "--api-key", KEY, "--model", MODEL]  # fmt: skip
        start = time.monotonic()
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=90)
        elapsed = time.monotonic() - start
    assert elapsed < 5 + MARGIN_S, f"the run took {elapsed:.1f} s"  # under the 30 s --timeout: the deadline won
    f = top(json.loads(out.stdout))
    assert out.returncode == 1 and f["code"] == "access.timeout"
    # what was left of the 5 s (less the report's reserve) when the request went: less on a busier machine
    said = re.fullmatch(r"the server accepted the connection but its status line and headers were not complete within ([\d.]+) s", f["title"])
    assert said and 0 < float(said[1]) < 5, f["title"]


def test_gzip_bomb_is_read_only_up_to_the_cap(tmp_path: Path) -> None:
    """512 MiB of zeros as half a megabyte of gzip: the probe keeps 256 KB of it and its memory
    stays bounded (the child's peak RSS, measured by a wrapper whose only child is the doctor)."""
    hostile.bomb()  # built before the server starts, not inside the run's time
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    with hostile.HostileServer(hostile.gzip_bomb) as srv:
        doctor_cmd = [sys.executable, "-m", "llm_doctor", "run", "--only", "access", "--format", "json", "--timeout", str(TIMEOUT_S),
                      "--deadline", str(DEADLINE_S), "--base-url", srv.url() + "/v1", "--api-key", KEY, "--model", MODEL]  # fmt: skip
        wrapper = ("import json, resource, subprocess, sys; out = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
                   "print(json.dumps([out.returncode, out.stdout, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))")  # fmt: skip
        out = subprocess.run([sys.executable, "-c", wrapper, *doctor_cmd], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    rc, stdout, peak_kib = json.loads(out.stdout)
    assert peak_kib < 150 * 1024, f"peak RSS {peak_kib // 1024} MiB"
    f = top(json.loads(stdout))
    assert rc == 1 and f["code"] == "access.response_invalid" and f["title"] == "the answer is not JSON"


def test_tls_handshake_that_never_completes_is_a_timeout_not_a_certificate_error(tmp_path: Path) -> None:
    rc, report, _ = run_against(tmp_path, hostile.silent, scheme="https", read_request=False)
    f = top(report)
    assert rc == 1 and f["code"] == "access.tls_failed"
    assert f["title"].startswith("the TLS handshake with 127.0.0.1:")
    assert f["title"].endswith("timed out: TCP was accepted but the handshake never finished (not a certificate problem)")
    assert "certificate verification failed" not in json.dumps(report)


def test_tls_port_that_drops_the_handshake_is_not_a_certificate_error(tmp_path: Path) -> None:
    rc, report, _ = run_against(tmp_path, hostile.closed_at_once, scheme="https", read_request=False)
    f = top(report)
    assert rc == 1 and f["code"] == "access.tls_failed"
    assert f["title"].startswith("the TLS handshake with 127.0.0.1:")
    assert f["title"].endswith("failed: closed during the handshake (not a certificate problem)")


@pytest.fixture
def endless_sse() -> Iterator[FakeServer]:
    base = VllmLike(key=KEY, models=[MODEL])

    def app(req: Request) -> Reply:
        if req.method == "POST" and (req.json or {}).get("stream") and req.headers.get("authorization") == f"Bearer {KEY}":
            event = b'data: {"choices": [{"index": 0, "delta": {"content": "la"}}]}\n\n'
            return Reply(200, chunks=iter(lambda: event, None), content_type="text/event-stream", chunk_delay=0.05)
        return base(req)

    with FakeServer(app) as srv:
        yield srv


def test_endless_sse_is_cut_and_named(tmp_path: Path, endless_sse: FakeServer) -> None:
    rc, report, elapsed = doctor(tmp_path, endless_sse.url + "/v1")
    assert elapsed < DEADLINE_S + MARGIN_S
    f = top(report)
    assert rc == 1 and f["code"] == "access.streaming_broken"
    assert f["title"].startswith(f"the stream did not end within {TIMEOUT_S} s: ")
    assert f["title"].endswith(" events and no data: [DONE]")


def perf_run(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], float]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "llm_doctor", "run", "--only", "perf", "--format", "json", "--timeout", str(TIMEOUT_S),
           "--deadline", str(DEADLINE_S), "--sample", "0.5", *args]  # fmt: skip
    start = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=DEADLINE_S + 60)
    elapsed = time.monotonic() - start
    assert "Traceback" not in out.stderr, out.stderr
    assert elapsed < DEADLINE_S + MARGIN_S, f"the run took {elapsed:.1f} s"
    return out.returncode, json.loads(out.stdout), elapsed


@pytest.mark.parametrize(
    "behaviour, reason",
    [
        (hostile.trickled_headers, "WallClockTimeout: no complete answer within 2 s: still waiting for the status line and headers"),
        (hostile.trickled_body, "WallClockTimeout: no complete answer within 2 s: still reading the body"),
        (hostile.megabyte_of_headers, "RemoteProtocolError: Receive buffer too long"),
        (hostile.not_http, "RemoteProtocolError: Server disconnected without sending a response."),
    ],
)
def test_hostile_metrics_endpoint_is_cut_and_named(tmp_path: Path, behaviour: hostile.Behaviour, reason: str) -> None:
    with hostile.HostileServer(behaviour) as srv:
        _, report, _ = perf_run(tmp_path, "--metrics-url", srv.url() + "/metrics")
    assert report["facts"]["metrics"]["reason"].startswith(reason)
    latency = next(c for c in report["checks"] if c["id"] == "perf.latency")
    assert latency["status"] != "pass" and latency["detail"].startswith(f"no /metrics scrape: {reason}")
    assert report["status"] == "incomplete"  # a --metrics-url asked for by name and not read is a gap
    (gap,) = [f for f in report["findings"] if f["code"] == "doctor.input_incomplete"]
    assert gap["evidence"] == [f"{srv.url()}/metrics: the /metrics scrape failed: {report['facts']['metrics']['reason']}"]


def test_trickling_server_cannot_stretch_the_load_probe(tmp_path: Path) -> None:
    with hostile.HostileServer(hostile.trickled_headers) as srv:
        _, report, _ = perf_run(tmp_path, "--base-url", srv.url() + "/v1", "--model", MODEL, "--probe-load", "4")
    probe = report["facts"]["host"]["probe"]
    assert probe["errors"] == probe["requests"] >= 1
    assert any(n.startswith("WallClockTimeout: no complete answer within") for n in probe["notes"])


def test_tls_handshake_that_hangs_inside_a_proxy_tunnel_is_a_tls_timeout(tmp_path: Path) -> None:
    from tests.servers.proxy import Proxy

    with hostile.HostileServer(hostile.silent, read_request=False) as srv, Proxy() as proxy:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "HTTPS_PROXY": proxy.url}
        cmd = [sys.executable, "-m", "llm_doctor", "run", "--only", "access", "--format", "json", "--timeout", str(TIMEOUT_S),
               "--deadline", str(DEADLINE_S), "--base-url", srv.url("https") + "/v1", "--api-key", KEY, "--model", MODEL]  # fmt: skip
        start = time.monotonic()
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=90)
        elapsed = time.monotonic() - start
    assert elapsed < DEADLINE_S + MARGIN_S
    report = json.loads(out.stdout)
    f = top(report)
    assert out.returncode == 1 and f["code"] == "access.timeout"
    assert f["title"] == f"the TLS handshake did not complete within {TIMEOUT_S} s (a timeout, not a certificate problem)"
    assert proxy.seen == [f"CONNECT 127.0.0.1:{srv.port}"]


@pytest.mark.parametrize("flag, value", [("--deadline", "0"), ("--deadline", "-1"), ("--deadline", "nan"), ("--timeout", "0"),
                                         ("--timeout", "inf"), ("--timeout", "abc")])  # fmt: skip
def test_a_time_limit_that_cannot_bound_anything_is_a_usage_error(tmp_path: Path, flag: str, value: str) -> None:
    """--deadline 0 used to end the run before any check and report `ok`, exit 0: a gate passed."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "llm_doctor", "run", "--only", "access", "--base-url", "http://127.0.0.1:9/v1", flag, value],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"Error: Invalid value for '{flag}': '{value}' " in out.stderr
