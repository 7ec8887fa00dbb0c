"""The access layer through the CLI, the way it is run in anger:
`llm-doctor run --only access --format json --base-url URL --api-key KEY --model ID`
against real servers on 127.0.0.1, each with one fault planted. Each fault must be the rank-1
finding with exit 1, with the evidence and the computed fix; the healthy endpoint exits 0; and
the key appears in no output (stdout, stderr, JSON facts, markdown, the saved bundle)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trustme

from tests.servers.http import FakeServer, Reply, fixed, fixture, free_port
from tests.servers.openai_like import AnthropicLike, VllmLike
from tests.servers.proxy import Proxy

KEY = "sk-canary-0123456789abcdefXYZ"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def doctor(tmp_path: Path, *args: str, env: dict[str, str] | None = None, key: str = KEY) -> tuple[int, dict[str, Any], str]:
    """Run the CLI in a clean environment (no proxies, empty HOME); return exit code, report, all output."""
    clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), **(env or {})}
    bundle = tmp_path / "bundle.json"
    cmd = [sys.executable, "-m", "llm_doctor", "run", "--only", "access", "--format", "json", "--timeout", "2",
           "--save-bundle", str(bundle), *args]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env=clean, cwd=tmp_path, timeout=60)
    assert "Traceback" not in out.stderr, out.stderr
    report = json.loads(out.stdout)
    everything = out.stdout + out.stderr + (bundle.read_text() if bundle.exists() else "")
    assert KEY not in everything and KEY[3:-4] not in everything
    return out.returncode, report, everything


def top(report: dict[str, Any]) -> dict[str, Any]:
    assert report["findings"], "no findings"
    first = report["findings"][0]
    assert first["rank"] == 1
    return first


def commands(finding: dict[str, Any]) -> list[str]:
    return [f["command"] for f in finding["fixes"] if f["command"]]


@pytest.fixture
def vllm() -> Any:
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        yield srv


def test_healthy_endpoint_exits_0(tmp_path: Path, vllm: FakeServer) -> None:
    rc, report, _ = doctor(tmp_path, "--base-url", vllm.url + "/v1", "--api-key", KEY, "--model", MODEL)
    assert rc == 0
    assert [f for f in report["findings"] if f["severity"] == "error"] == []
    status = {c["id"]: c["status"] for c in report["checks"]}
    assert status["access.request"] == "pass" and status["access.streaming"] == "pass" and status["access.key"] == "pass"
    assert report["facts"]["settings"]["api_key"]["value"] == "sk-...fXYZ"


def test_wrong_key(tmp_path: Path, vllm: FakeServer) -> None:
    rc, report, _ = doctor(tmp_path, "--base-url", vllm.url + "/v1", "--api-key", "sk-wrong-key-0000000000000", "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.key_rejected"
    assert f"GET {vllm.url}/v1/models -> 401 Unauthorized" in f["evidence"]
    status = {c["id"]: c["status"] for c in report["checks"]}
    assert status["access.model"] == "blocked"


def test_missing_key(tmp_path: Path, vllm: FakeServer) -> None:
    rc, report, _ = doctor(tmp_path, "--base-url", vllm.url + "/v1", "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.key_missing"
    assert f"GET {vllm.url}/v1/models -> 401 Unauthorized" in f["evidence"]
    assert "read -rs OPENAI_API_KEY && export OPENAI_API_KEY" in commands(f)


def test_malformed_key_with_newline_from_env(tmp_path: Path, vllm: FakeServer) -> None:
    rc, report, _ = doctor(tmp_path, "--base-url", vllm.url + "/v1", "--model", MODEL, env={"OPENAI_API_KEY": KEY + "\n"})
    f = top(report)
    assert rc == 1 and f["code"] == "access.key_malformed"
    assert "it contains a newline (pasted from a file or `echo` output)" in f["evidence"]
    assert f"with that removed the server accepted the key: GET {vllm.url}/v1/models -> 200" in f["evidence"]
    assert commands(f) == ['export OPENAI_API_KEY="$(printf %s "$OPENAI_API_KEY" | tr -d "[:space:]\\"\'")"']


def test_bearer_prefix_key(tmp_path: Path, vllm: FakeServer) -> None:
    rc, report, _ = doctor(tmp_path, "--base-url", vllm.url + "/v1", "--api-key", f"Bearer {KEY}", "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.key_malformed"
    assert f["title"] == "the API key is malformed: it starts with 'Bearer ' (clients add that prefix themselves)"


def test_model_typo(tmp_path: Path, vllm: FakeServer) -> None:
    rc, report, _ = doctor(tmp_path, "--base-url", vllm.url + "/v1", "--api-key", KEY, "--model", "meta-llama/Llama-3.1-8b-instruct")
    f = top(report)
    assert rc == 1 and f["code"] == "access.model_not_found"
    assert f"GET /models lists 1: {MODEL}" in f["evidence"]
    assert commands(f)[0] == f"--model {MODEL}"
    assert commands(f)[-1] == "--served-model-name meta-llama/Llama-3.1-8b-instruct"  # owned_by vllm


def test_model_missing(tmp_path: Path, vllm: FakeServer) -> None:
    rc, report, _ = doctor(tmp_path, "--base-url", vllm.url + "/v1", "--api-key", KEY)
    f = top(report)
    assert rc == 1 and f["code"] == "access.model_id_missing"
    assert f"the server serves: {MODEL}" in f["evidence"]
    assert commands(f)[0] == f"--model {MODEL}"


@pytest.mark.parametrize("path", ["", "/v1/v1", "/v1/chat/completions"])
def test_base_url_path_wrong(tmp_path: Path, vllm: FakeServer, path: str) -> None:
    rc, report, _ = doctor(tmp_path, "--base-url", vllm.url + path, "--api-key", KEY, "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.base_url_invalid"
    assert commands(f)[0] == f"--base-url {vllm.url}/v1"


def test_refused_port(tmp_path: Path) -> None:
    port = free_port()
    rc, report, _ = doctor(tmp_path, "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key", KEY, "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.connect_failed"
    assert f["title"] == f"the TCP connection to 127.0.0.1:{port} was refused"
    assert f"-p {port}:{port}" in commands(f)


def test_unresolvable_host(tmp_path: Path) -> None:
    rc, report, _ = doctor(tmp_path, "--base-url", "http://no-such-host.invalid:8000/v1", "--api-key", KEY, "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.dns_failed"
    assert f["title"] == "the host name no-such-host.invalid does not resolve"
    assert "getent hosts no-such-host.invalid" in commands(f)


def test_html_from_a_proxy(tmp_path: Path) -> None:
    page = "<!DOCTYPE html><html><head><title>Sign in - Corporate Access</title></head><body>login</body></html>"
    with FakeServer(fixed(Reply(200, page, "text/html; charset=utf-8"))) as srv:
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.response_invalid"
    assert f"POST {srv.url}/v1/chat/completions -> 200 HTML page <title>Sign in - Corporate Access</title>" in f["evidence"]


def test_200_without_choices(tmp_path: Path) -> None:
    app = VllmLike(key=KEY, models=[MODEL], chat_override=Reply(200, {"id": "x", "object": "chat.completion", "result": "OK"}))
    with FakeServer(app) as srv:
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.response_invalid"
    assert f["title"] == "200, but the answer has no `choices`"
    assert "top-level keys: id, object, result" in f["evidence"]


@pytest.mark.parametrize("base", ["", "/v1"])
def test_anthropic_only_endpoint(tmp_path: Path, base: str) -> None:
    with FakeServer(AnthropicLike(key=KEY)) as srv:
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + base, "--api-key", KEY, "--model", "claude-sonnet-4-5")
    f = top(report)
    assert rc == 1 and f["code"] == "access.protocol_mismatch"
    assert f"POST {srv.url}/v1/messages -> 200 Anthropic message, stop_reason end_turn" in f["evidence"]
    assert f"export ANTHROPIC_BASE_URL={srv.url}" in commands(f)


def test_rate_limited(tmp_path: Path) -> None:
    body = {"error": {"message": "Rate limit reached for requests", "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
    with FakeServer(VllmLike(key=KEY, chat_override=Reply(429, body, headers={"retry-after": "20"}), models=[MODEL])) as srv:
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.rate_limited"
    assert "Retry-After: 20" in f["evidence"]
    assert "wait 20 s (Retry-After)" in f["fixes"][0]["summary"]


def test_quota_exceeded_is_not_a_rate_limit(tmp_path: Path) -> None:
    app = VllmLike(key=KEY, models=[MODEL], chat_override=Reply(429, fixture("openai-insufficient-quota.json")))
    with FakeServer(app) as srv:
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.quota_exceeded"


def test_502_from_nginx(tmp_path: Path) -> None:
    with FakeServer(fixed(Reply(502, fixture("nginx-502.html"), "text/html", {"server": "nginx/1.18.0 (Ubuntu)"}))) as srv:
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.server_error"
    assert f["title"] == "the server answered 502: HTML page <title>502 Bad Gateway</title>"


def test_server_that_never_answers(tmp_path: Path) -> None:
    with FakeServer(fixed(Reply(hang=True))) as srv:
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.timeout"
    assert f["title"] == "the server accepted the connection but sent no answer within 2 s"
    assert "--timeout 30" in commands(f)
    assert len(srv.requests) == 1  # nothing more is sent to a hung server


def test_sse_broken_by_buffering(tmp_path: Path) -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL], stream="buffered")) as srv:
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.streaming_broken"
    assert f["title"].startswith("the stream is buffered")
    assert "proxy_buffering off;" in commands(f)


def test_self_signed_tls(tmp_path: Path) -> None:
    ca = trustme.CA()
    ctx = __import__("ssl").SSLContext(__import__("ssl").PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    with FakeServer(VllmLike(key=KEY, models=[MODEL]), ssl_context=ctx) as srv:
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL)
        f = top(report)
        assert rc == 1 and f["code"] == "access.tls_failed"
        assert f["title"] == "TLS certificate verification failed: unknown CA"
        assert "--ca-bundle /path/to/ca.pem" in commands(f)
        ca_file = tmp_path / "ca.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL, "--ca-bundle", str(ca_file))
        assert rc == 0, report["findings"]


def test_dead_proxy_in_environment(tmp_path: Path, vllm: FakeServer) -> None:
    port = free_port()
    env = {"HTTP_PROXY": f"http://127.0.0.1:{port}"}
    rc, report, _ = doctor(tmp_path, "--base-url", vllm.url + "/v1", "--api-key", KEY, "--model", MODEL, env=env)
    f = top(report)
    assert rc == 1 and f["code"] == "access.proxy_failed"
    assert f["title"] == f"the proxy http://127.0.0.1:{port} (from HTTP_PROXY) is not reachable: the connection was refused"
    assert "export NO_PROXY=127.0.0.1,localhost,127.0.0.1" in commands(f)


def test_working_proxy_carries_the_requests(tmp_path: Path, vllm: FakeServer) -> None:
    with Proxy() as proxy:
        rc, report, _ = doctor(
            tmp_path, "--base-url", vllm.url + "/v1", "--api-key", KEY, "--model", MODEL, env={"http_proxy": proxy.url}
        )
        assert rc == 0, report["findings"]
        assert f"GET {vllm.url}/v1/models" in proxy.seen
    assert report["facts"]["endpoint"]["proxy_var"] == "http_proxy"


def test_markdown_and_text_outputs_hold_no_key(tmp_path: Path, vllm: FakeServer) -> None:
    for fmt in ("markdown", "text", "html", "junit"):
        out = subprocess.run(
            [sys.executable, "-m", "llm_doctor", "run", "--only", "access", "--format", fmt, "--base-url", vllm.url + "/v1",
             "--api-key", KEY + " ", "--model", "nope"],  # fmt: skip
            capture_output=True, text=True, env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}, cwd=tmp_path, timeout=60,
        )  # fmt: skip
        assert out.returncode == 1
        assert KEY not in out.stdout + out.stderr


def test_server_echoing_the_key_leaks_nothing(tmp_path: Path) -> None:
    """A hostile or careless gateway that echoes the Authorization header in its body and headers."""

    def echo(req: Any) -> Reply:
        auth = req.headers.get("authorization", "")
        return Reply(401, {"error": {"message": f"key {auth} / {auth.removeprefix('Bearer ')} is not valid"}},
                     headers={"www-authenticate": f'Bearer realm="{auth}"'})  # fmt: skip

    with FakeServer(echo) as srv:
        rc, report, everything = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL)
    assert rc == 1 and top(report)["code"] == "access.key_rejected"
    assert "sk-...fXYZ" in everything


def test_deadline_shorter_than_timeout_still_reports_the_hang(tmp_path: Path) -> None:
    """The server never answers; the request's timeout is what the 8 s deadline had left (less on a
    busier machine), never the 30 s --timeout."""
    with FakeServer(fixed(Reply(hang=True))) as srv:
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL, "--timeout", "30", "--deadline", "8")
    f = top(report)
    assert rc == 1 and f["code"] == "access.timeout"
    assert 0 < report["facts"]["endpoint"]["steps"][-1]["detail"]["timeout_s"] < 8


def test_the_engines_error_inside_a_503_names_the_cause(tmp_path: Path) -> None:
    # a gateway's 503 quoting vLLM's CUDA OOM (the body shape of vLLM's ErrorResponse; tests/test_failure_chains.py GATEWAY_503)
    body = {"object": "error", "message": "CUDA out of memory. Tried to allocate 19.63 GiB. GPU 3 has a total capacity of 79.15 GiB "
            "of which 17.73 GiB is free.", "type": "InternalServerError", "param": None, "code": 503}
    with FakeServer(VllmLike(key=KEY, models=[MODEL], chat_override=Reply(503, body))) as srv:
        rc, report, _ = doctor(tmp_path, "--base-url", srv.url + "/v1", "--api-key", KEY, "--model", MODEL)
    f = top(report)
    assert rc == 1 and f["code"] == "access.server_error"
    assert f["title"].startswith("the server answered 503 with the engine's error (cuda_oom): CUDA out of memory. Tried to allocate 19.63 GiB")
    assert "the body names the engine's failure: cuda_oom (recognised by: template)" in f["evidence"]
    assert f["fixes"][0]["summary"].startswith("The engine behind it failed (cuda_oom)")


@pytest.mark.parametrize(
    "url, said",
    [
        ("http://[bad/v1", "its host opens '[' without a closing ']' (IPv6 is written http://[::1]:8000)"),
        ("http://[gpu-box]:8000/v1", "its host [gpu-box] is not an IPv6 address (only IPv6 is written in [ ])"),
        ("http://gpu-box:99999/v1", "its port is not a number in 1-65535"),
    ],
)
def test_a_base_url_urlsplit_refuses_is_the_access_finding_in_a_full_run(tmp_path: Path, url: str, said: str) -> None:
    """Every layer, not only access: the live collector (metrics, load probe) must not crash on the
    URL either, which would turn the run into doctor.input_incomplete."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "llm_doctor", "run", "--format", "json", "--sample", "0", "--base-url", url]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert "Traceback" not in out.stderr, out.stderr
    report = json.loads(out.stdout)
    assert out.returncode == 1 and report["status"] == "error"
    codes = [f["code"] for f in report["findings"]]
    assert "doctor.input_incomplete" not in codes
    f = top(report)
    assert (f["code"], f["title"]) == ("access.base_url_invalid", f"the base URL is malformed: {said}")
