"""The access checks over a real probe transcript (in process, real sockets on 127.0.0.1), and
over hand-built transcripts for what 127.0.0.1 cannot show (a public host, a provider's host)."""

from __future__ import annotations

import datetime as dt
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from llm_doctor.collect import RunOptions
from llm_doctor.collect.endpoint import MAX_BODY, probe
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.facts import Facts
from llm_doctor.facts.access import EndpointFacts, ProbeStep, Setting
from llm_doctor.report import Report, build_report
from llm_doctor.settings import resolve
from tests.servers.http import FakeServer, Reply, Request, fixed, free_port
from tests.servers.openai_like import AnthropicLike, VllmLike
from tests.servers.proxy import Proxy

KEY = "sk-canary-0123456789abcdefXYZ"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def diagnose(
    base_url: str | None,
    key: str | None = KEY,
    model: str | None = MODEL,
    protocol: str = "auto",
    env: dict[str, str] | None = None,
    timeout: float = 2.0,
    insecure: bool = False,
    ca_bundle: str | None = None,
    home: Path | None = None,
) -> Report:
    settings = resolve(base_url, key, model, protocol, env=env or {}, home=home or Path("/nonexistent"), cwd=Path("/nonexistent"))
    opts = RunOptions(layers=("access",), timeout=timeout, insecure=insecure, ca_bundle=ca_bundle)
    deadline = Deadline(30)
    facts = Facts(settings=settings.to_facts())
    facts.endpoint = probe(settings, opts, deadline, None)
    return judge(facts)


def judge(facts: Facts) -> Report:
    specs = [s for s in select(load_checks(), ["access"]) if s.id != "access.client_log"]
    return build_report(run_checks(facts, specs, Deadline(30)), facts)


def status(report: Report) -> dict[str, str]:
    return {c.id: c.status for c in report.checks}


def detail(report: Report, check_id: str) -> str:
    return next(c.detail for c in report.checks if c.id == check_id)


def commands(report: Report) -> list[str]:
    return [x.command for x in report.findings[0].fixes if x.command]


def tls_server_ctx(cert: trustme.LeafCert) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(ctx)
    return ctx


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def test_reasoning_model_with_empty_content_is_healthy() -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL], reasoning=True)) as srv:
        report = diagnose(srv.url + "/v1")
    assert report.findings == []
    assert status(report)["access.request"] == "pass"
    assert detail(report, "access.request").startswith("healthy: a reasoning model spent max_tokens=16 on reasoning_content")


def test_trailing_slash_that_the_server_doubles_is_a_warning() -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        report = diagnose(srv.url + "/v1/")
    f = report.findings[0]
    assert (f.code, f.severity) == ("access.base_url_invalid", "warn")
    assert f"GET {srv.url}/v1//models -> 404 Not Found" in f.evidence
    assert commands(report) == [f"--base-url {srv.url}/v1"]
    assert report.exit_code("error") == 0


def test_query_parameters_in_base_url() -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        report = diagnose(srv.url + "/v1?api-version=2024-10-21")
    f = report.findings[0]
    assert f.code == "access.base_url_invalid" and f.severity == "error"
    assert "query parameters ?api-version=2024-10-21: clients append paths after them" in f.evidence
    assert commands(report) == [f"--base-url {srv.url}/v1"]


@pytest.mark.parametrize("prefix", ["/compatible-mode/v1", "/api/paas/v4", "/v1beta/openai", "/api"])
def test_gateway_paths_found_by_probing(prefix: str) -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL], prefix=prefix)) as srv:
        report = diagnose(srv.url + "/v1")
    f = report.findings[0]
    assert f.code == "access.base_url_invalid"
    assert commands(report)[0] == f"--base-url {srv.url}{prefix}"
    assert f"GET {srv.url}{prefix}/models -> 200: the API answers under {srv.url}{prefix}" in f.evidence


def test_https_url_to_a_plain_http_port() -> None:
    with FakeServer(VllmLike(models=[MODEL])) as srv:
        report = diagnose(srv.url.replace("http://", "https://") + "/v1")
    f = report.findings[0]
    assert (f.code, f.title) == ("access.tls_failed", "the port speaks plain HTTP but the base URL says https://")
    assert commands(report) == [f"--base-url {srv.url}/v1"]


def test_http_url_to_a_tls_port(ca: trustme.CA) -> None:
    with FakeServer(VllmLike(models=[MODEL]), ssl_context=tls_server_ctx(ca.issue_cert("127.0.0.1"))) as srv:
        plain = srv.url.replace("https://", "http://")
        report = diagnose(plain + "/v1")
    f = report.findings[0]
    assert (f.code, f.title) == ("access.tls_failed", "the port speaks HTTPS but the base URL says http://")
    assert commands(report) == [f"--base-url {srv.url}/v1"]


def test_expired_certificate(ca: trustme.CA, ca_file: str) -> None:
    past = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    cert = ca.issue_cert("127.0.0.1", not_before=past - dt.timedelta(days=30), not_after=past)
    with FakeServer(VllmLike(models=[MODEL]), ssl_context=tls_server_ctx(cert)) as srv:
        report = diagnose(srv.url + "/v1", ca_bundle=ca_file)
    f = report.findings[0]
    assert (f.code, f.title) == ("access.tls_failed", "TLS certificate verification failed: expired")
    assert "certificate has expired" in f.evidence[0]


def test_certificate_for_another_host(ca: trustme.CA, ca_file: str) -> None:
    with FakeServer(VllmLike(models=[MODEL]), ssl_context=tls_server_ctx(ca.issue_cert("models.example.com"))) as srv:
        report = diagnose(srv.url + "/v1", ca_bundle=ca_file)
    assert (report.findings[0].code, report.findings[0].title) == ("access.tls_failed", "TLS certificate verification failed: wrong host")


def test_insecure_is_a_warning_that_names_what_verification_would_say(ca: trustme.CA) -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL]), ssl_context=tls_server_ctx(ca.issue_cert("127.0.0.1"))) as srv:
        report = diagnose(srv.url + "/v1", insecure=True)
    f = report.findings[0]
    assert (f.code, f.severity) == ("access.tls_failed", "warn")
    assert f.evidence[1].startswith("verification would fail: unknown CA")
    assert status(report)["access.streaming"] == "pass"


def test_https_through_a_connect_proxy(ca: trustme.CA, ca_file: str) -> None:
    with Proxy() as proxy, FakeServer(VllmLike(key=KEY, models=[MODEL]), ssl_context=tls_server_ctx(ca.issue_cert("127.0.0.1"))) as srv:
        report = diagnose(srv.url + "/v1", env={"HTTPS_PROXY": proxy.url}, ca_bundle=ca_file)
        assert f"CONNECT 127.0.0.1:{srv.port}" in proxy.seen
    assert report.findings == []
    assert report.facts.endpoint and report.facts.endpoint.proxy_var == "HTTPS_PROXY"


def test_no_proxy_bypasses_a_dead_proxy() -> None:
    env = {"HTTP_PROXY": f"http://127.0.0.1:{free_port()}", "NO_PROXY": "localhost,127.0.0.1"}
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        report = diagnose(srv.url + "/v1", env=env)
    assert report.findings == []
    assert report.facts.endpoint and report.facts.endpoint.steps[0].detail["bypass"] == "NO_PROXY=127.0.0.1"


def test_proxy_url_without_scheme_is_named() -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        report = diagnose(srv.url + "/v1", env={"http_proxy": "proxy.corp:3128:x"})
    f = report.findings[0]
    assert f.code == "access.proxy_failed" and f.title == "the proxy in http_proxy is unusable"


def test_redirect_to_another_host_is_not_followed_with_the_key() -> None:
    with FakeServer(VllmLike(models=[MODEL])) as other:
        target = f"http://localhost:{other.port}/v1/models"
        with FakeServer(fixed(Reply(307, b"", headers={"location": target}))) as srv:
            report = diagnose(srv.url + "/v1")
        assert other.requests == []
    f = report.findings[0]
    assert f.code == "access.base_url_invalid"
    assert f"Location: {target}" in f.evidence
    assert commands(report) == [f"--base-url http://localhost:{other.port}/v1"]


def test_endless_body_is_capped() -> None:
    def endless(req: Request) -> Reply:
        def chunks() -> Iterator[bytes]:
            while True:
                yield b'{"data": [' + b" " * 65536

        return Reply(200, chunks=chunks())

    with FakeServer(endless) as srv:
        report = diagnose(srv.url + "/v1", model=None)
    assert report.facts.endpoint is not None
    models = report.facts.endpoint.steps[2]
    assert models.step == "models" and models.detail["truncated"] is True
    assert len(models.body_excerpt) <= 2000 and MAX_BODY == 256 * 1024


@pytest.mark.parametrize(
    "mode, title",
    [
        ("json", "stream: true was answered with application/json, not server-sent events"),
        ("no_done", "the stream ended without data: [DONE] after 4 events"),
        ("stall", "the stream stalled after 1 events: nothing more for 2.0 s and no data: [DONE]"),
    ],
)
def test_streaming_broken(mode: str, title: str) -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL], stream=mode)) as srv:
        report = diagnose(srv.url + "/v1")
    f = report.findings[0]
    assert (f.code, f.title) == ("access.streaming_broken", title)


def test_anthropic_protocol_healthy() -> None:
    with FakeServer(AnthropicLike(key=KEY)) as srv:
        report = diagnose(None, model="claude-sonnet-4-5", env={"ANTHROPIC_BASE_URL": srv.url}, protocol="auto")
    assert report.facts.endpoint and report.facts.endpoint.protocol == "anthropic"
    assert report.findings == []
    assert detail(report, "access.streaming").endswith(" ms, 3 events, ended with message_stop")


def test_anthropic_client_pointed_at_an_openai_endpoint() -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        report = diagnose(srv.url, protocol="anthropic")
    f = report.findings[0]
    assert f.code == "access.protocol_mismatch"
    assert f.title == "the endpoint speaks the OpenAI chat completions API, not the Anthropic Messages API"
    assert f"export OPENAI_BASE_URL={srv.url}/v1" in commands(report)


def test_anthropic_base_url_with_v1_is_corrected() -> None:
    with FakeServer(AnthropicLike(key=KEY)) as srv:
        report = diagnose(srv.url + "/v1", model="claude-sonnet-4-5", protocol="anthropic")
    f = report.findings[0]
    assert f.code == "access.base_url_invalid"
    assert commands(report)[0] == f"--base-url {srv.url}"


def test_litellm_style_invalid_model_400() -> None:
    message = "/chat/completions: Invalid model name passed in model=gpt-5. Call `/v1/models` to view available models for your key."

    def app(req: Request) -> Reply:
        if req.path == "/v1/models":
            return Reply(200, {"data": [{"id": "fake-gpt", "object": "model", "created": 1677610602, "owned_by": "openai"}], "object": "list"})
        return Reply(400, {"error": {"message": message, "type": "None", "param": "None", "code": "400"}})

    with FakeServer(app) as srv:
        report = diagnose(srv.url + "/v1", model="gpt-5")
    f = report.findings[0]
    assert f.code == "access.model_not_found"
    assert f"POST {srv.url}/v1/chat/completions -> 400 {message}" in f.evidence
    assert commands(report)[0] == "--model fake-gpt"


def test_llama_cpp_style_any_name_accepted_is_only_a_warning() -> None:
    app = VllmLike(models=["gemma-tiny"])
    with FakeServer(lambda req: app(req) if req.method == "GET" else VllmLike(models=["other"])(req)) as srv:
        report = diagnose(srv.url + "/v1", key=None, model="other")
    f = report.findings[0]
    assert (f.code, f.severity) == ("access.model_not_found", "warn")
    assert report.exit_code("error") == 0


def test_placeholder_key_rejected_says_so() -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        report = diagnose(srv.url + "/v1", key="EMPTY")
    f = report.findings[0]
    assert f.code == "access.key_rejected" and "the key is a placeholder, not a real key" in f.evidence


def test_no_key_and_no_auth_needed_is_fine() -> None:
    with FakeServer(VllmLike(models=[MODEL])) as srv:
        report = diagnose(srv.url + "/v1", key=None)
    assert report.findings == []
    assert detail(report, "access.key") == "no key configured, and the server did not ask for one"


def test_deadline_stops_the_probe() -> None:
    with FakeServer(fixed(Reply(hang=True))) as srv:
        settings = resolve(srv.url + "/v1", KEY, MODEL, env={}, home=Path("/nonexistent"), cwd=Path("/nonexistent"))
        facts = Facts(settings=settings.to_facts())
        facts.endpoint = probe(settings, RunOptions(timeout=10), Deadline(0.5), None)
    models = facts.endpoint.steps[-1]
    assert models.detail["timeout_s"] <= 0.5
    assert judge(facts).findings[0].code == "access.timeout"


# -- transcripts 127.0.0.1 cannot produce -------------------------------------------------------
def facts_for(base: str, key: str, addresses: list[str], steps: list[ProbeStep]) -> Facts:
    settings = resolve(base, key, MODEL, env={}, home=Path("/nonexistent"), cwd=Path("/nonexistent")).to_facts()
    return Facts(settings=settings, endpoint=EndpointFacts(base_url=base, protocol="openai", steps=steps, resolved=addresses,
                                                          working_base_url=base, key_sent="as-is"))  # fmt: skip


def ok_steps(base: str) -> list[ProbeStep]:
    host = base.split("/")[2]
    models = ProbeStep("models", f"GET {base}/models", ok=True, status=200, detail={"json": True, "model_ids": [MODEL]})
    chat = ProbeStep("chat", f"POST {base}/chat/completions", ok=True, status=200,
                     detail={"json": True, "choices": 1, "content_len": 2, "finish_reason": "stop"})  # fmt: skip
    return [ProbeStep("dns", host, ok=True), ProbeStep("tcp", host, ok=True), models, chat]


def test_key_over_plain_http_to_a_public_host_warns() -> None:
    base = "http://llm.example.com:8000/v1"
    report = judge(facts_for(base, KEY, ["93.184.215.14"], ok_steps(base)))
    f = report.findings[0]
    assert (f.code, f.severity) == ("access.tls_failed", "warn")
    assert f.title == "the API key is sent over plain http to llm.example.com, outside the local network"
    assert commands(report) == ["--base-url https://llm.example.com:8000/v1"]


def test_key_over_plain_http_on_the_lan_is_fine() -> None:
    base = "http://gpu-box.internal:8000/v1"
    assert judge(facts_for(base, KEY, ["10.0.0.5"], ok_steps(base))).findings == []


def test_anthropic_key_sent_to_openai_is_malformed() -> None:
    base = "https://api.openai.com/v1"
    steps = ok_steps(base)[:2] + [ProbeStep("models", f"GET {base}/models", status=401, detail={"json": True, "error_message": "Incorrect API key provided"})]
    report = judge(facts_for(base, "sk-ant-api03-abcdefghijklmnopqrstuvwxyz", ["162.159.140.245"], steps))
    f = report.findings[0]
    assert f.code == "access.key_malformed"
    assert "it has the shape of Anthropic keys, but api.openai.com takes OpenAI keys" in f.evidence


def test_bundle_round_trip_gives_the_same_diagnosis() -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        live = diagnose(srv.url + "/v1", model="llama")
    offline = judge(Facts.from_dict(live.facts.to_dict()))
    assert [f.code for f in offline.findings] == [f.code for f in live.findings] == ["access.model_not_found"]
    assert offline.findings[0].evidence == live.findings[0].evidence


def test_hostile_server_binary_garbage() -> None:
    with FakeServer(fixed(Reply(200, bytes(range(256)) * 100, "application/octet-stream"))) as srv:
        report = diagnose(srv.url + "/v1")
    f = report.findings[0]
    assert (f.code, f.title) == ("access.response_invalid", "the answer is not JSON")


def test_many_parallel_probes_share_nothing() -> None:
    """Probes are independent objects: two at once against two servers do not mix transcripts."""
    results: dict[str, Any] = {}
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as a, FakeServer(VllmLike(key=KEY, models=["other"])) as b:
        threads = [threading.Thread(target=lambda u=u: results.__setitem__(u, diagnose(u + "/v1"))) for u in (a.url, b.url)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert results[a.url].findings == []
    assert results[b.url].findings[0].code == "access.model_not_found"


def test_setting_sources_reach_the_report() -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        report = diagnose(None, key=None, model=None, env={"OPENAI_BASE_URL": srv.url + "/v1", "OPENAI_API_KEY": KEY, "OPENAI_MODEL": MODEL})
    assert report.findings == []
    s = report.facts.settings
    assert s is not None and s.api_key == Setting("sk-...fXYZ", "env OPENAI_API_KEY")
    assert s.base_url.source == "env OPENAI_BASE_URL"


def test_dead_proxy_for_the_other_scheme_is_a_warning() -> None:
    port = free_port()
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        report = diagnose(srv.url + "/v1", env={"HTTPS_PROXY": f"http://127.0.0.1:{port}"})
    f = report.findings[0]
    assert (f.code, f.severity) == ("access.proxy_failed", "warn")
    assert f.title.startswith(f"HTTPS_PROXY=http://127.0.0.1:{port} is unreachable: this http:// endpoint does not use it")
    assert report.exit_code("error") == 0 and status(report)["access.request"] == "pass"


def test_litellm_without_a_database_rejects_other_keys_with_400() -> None:
    body = {"error": {"message": "No connected db.", "type": "no_db_connection", "param": "None", "code": "400"}}
    with FakeServer(fixed(Reply(400, body))) as srv:
        report = diagnose(srv.url + "/v1", key="sk-not-the-master-key")
    f = report.findings[0]
    assert f.code == "access.key_rejected"
    assert f"GET {srv.url}/v1/models -> 400 No connected db." in f.evidence


@pytest.mark.parametrize(
    "url, title, fix",
    [
        ("localhost:8000/v1", "the base URL is malformed: it has no http:// or https:// scheme", "--base-url http://localhost:8000/v1"),
        ("http://127.0.0.1:80000/v1", "the base URL is malformed: its port is not a number in 1-65535", "--base-url http://HOST:8000/v1"),
        ("http://127.0.0.1:0/v1", "the base URL is malformed: its port is not a number in 1-65535", "--base-url http://HOST:8000/v1"),
        ("http://[bad/v1", "the base URL is malformed: its host opens '[' without a closing ']' (IPv6 is written http://[::1]:8000)", "--base-url http://HOST:8000/v1"),
        ("http://[::1/v1", "the base URL is malformed: its host opens '[' without a closing ']' (IPv6 is written http://[::1]:8000)", "--base-url http://HOST:8000/v1"),
        ("http://[gpu-box]:8000/v1", "the base URL is malformed: its host [gpu-box] is not an IPv6 address (only IPv6 is written in [ ])", "--base-url http://HOST:8000/v1"),
        (" http://127.0.0.1:8000/v1\n", None, None),
    ],
)
def test_malformed_base_url(url: str, title: str | None, fix: str | None) -> None:
    report = diagnose(url, timeout=0.5)
    if title is None:  # surrounding whitespace is stripped, as clients do: the URL is then fine (refused)
        assert report.findings[0].code == "access.connect_failed"
        return
    f = report.findings[0]
    assert (f.code, f.title) == ("access.base_url_invalid", title)
    assert commands(report)[0] == fix
    assert status(report)["access.network"] == "skip"


def test_no_base_url_skips_access_unless_access_is_all_that_was_asked() -> None:
    settings = resolve(None, None, None, env={}, home=Path("/nonexistent"), cwd=Path("/nonexistent"))
    assert probe(settings, RunOptions(), Deadline(5), None) is None
    only_access = probe(settings, RunOptions(layers=("access",)), Deadline(5), None)
    assert only_access is not None and only_access.url_error == "no base URL in flags, environment or client config files"


def test_malformed_key_evidence_gives_the_clean_length() -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        report = diagnose(srv.url + "/v1", key=f"'{KEY}'")
    f = report.findings[0]
    assert f.code == "access.key_malformed"
    assert f.evidence[:3] == [f"key sk-...fXYZ (from flag --api-key, {len(KEY) + 2} characters)",
                              "it is wrapped in quotes, which became part of the value", f"{len(KEY)} characters once that is removed"]  # fmt: skip


def test_stream_held_back_and_sent_in_one_piece_is_buffered() -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL], stream="held")) as srv:
        report = diagnose(srv.url + "/v1")
    f = report.findings[0]
    assert f.code == "access.streaming_broken" and f.title.startswith("the stream is buffered")
    assert f.evidence[1].startswith("all 4 events arrived in one read, ")


def test_anthropic_server_that_answers_the_openai_route_with_its_own_400() -> None:
    inner = AnthropicLike(key=KEY)

    def app(req: Request) -> Reply:
        if req.path == "/v1/chat/completions":
            return Reply(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"}})
        return inner(req)

    with FakeServer(app) as srv:
        report = diagnose(srv.url + "/v1", model="claude-sonnet-4-5")
    f = report.findings[0]
    assert f.code == "access.protocol_mismatch"
    assert f"POST {srv.url}/v1/chat/completions -> 400 max_tokens: Field required" in f.evidence


def test_unreadable_ca_bundle_from_env(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.pem")
    report = diagnose("https://127.0.0.1:9/v1", env={"SSL_CERT_FILE": missing})
    f = report.findings[0]
    assert (f.code, f.title) == ("access.tls_failed", "the CA bundle cannot be used")
    assert f.evidence[0].startswith(f"CA bundle {missing} (from env SSL_CERT_FILE) cannot be used: ")


def test_402_payment_required_is_quota() -> None:
    body = {"error": {"message": "Insufficient credits. Add more using https://openrouter.ai/settings/credits", "code": 402}}
    with FakeServer(VllmLike(key=KEY, models=[MODEL], chat_override=Reply(402, body))) as srv:
        report = diagnose(srv.url + "/v1")
    f = report.findings[0]
    assert (f.code, f.title) == ("access.quota_exceeded", "the account's quota or credit is exhausted (402)")
    assert f"POST {srv.url}/v1/chat/completions -> 402 Insufficient credits. Add more using https://openrouter.ai/settings/credits" in f.evidence


def test_openai_model_not_found_code() -> None:
    body = {"error": {"message": "The model `gpt-5x` does not exist or you do not have access to it.",
                      "type": "invalid_request_error", "param": None, "code": "model_not_found"}}  # fmt: skip

    def app(req: Request) -> Reply:
        return Reply(200, {"object": "list", "data": []}) if req.method == "GET" else Reply(404, body)

    with FakeServer(app) as srv:
        report = diagnose(srv.url + "/v1", model="gpt-5x")
    assert report.findings[0].code == "access.model_not_found"


def test_endless_stream_is_cut_at_the_timeout() -> None:
    inner = VllmLike(key=KEY, models=[MODEL])

    def app(req: Request) -> Reply:
        if (req.json or {}).get("stream"):
            def events() -> Iterator[bytes]:
                while True:
                    yield b'data: {"choices": [{"delta": {"content": "x"}}]}\n\n' * 50

            return Reply(200, chunks=events(), content_type="text/event-stream", chunk_delay=0.01)
        return inner(req)

    with FakeServer(app) as srv:
        report = diagnose(srv.url + "/v1", timeout=1.0)
    f = report.findings[0]
    assert f.code == "access.streaming_broken" and f.title.startswith("the stream did not end within 1 s: ")
    stream = report.facts.endpoint.steps[-1] if report.facts.endpoint else None
    assert stream is not None and len(stream.detail["sse_event_ms"]) == 200


def test_truly_self_signed_certificate(ca: trustme.CA, tmp_path: Path) -> None:
    """A certificate that is its own issuer (what `openssl req -x509` makes): verify code 18."""
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    ca.cert_pem.write_to_path(str(cert))
    ca.private_key_pem.write_to_path(str(key))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    with FakeServer(VllmLike(models=[MODEL]), ssl_context=ctx) as srv:
        report = diagnose(srv.url + "/v1")
    f = report.findings[0]
    assert (f.code, f.title) == ("access.tls_failed", "TLS certificate verification failed: self-signed")
    assert "--ca-bundle /path/to/ca.pem" in commands(report)
