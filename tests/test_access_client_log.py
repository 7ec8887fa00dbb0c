"""Client output in a log, judged by checks/access/client_log.py: the code at rank 1, the quoted
line, and the fix's exact value, on real lines (fixtures/logs/*.source.txt says where each is from)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis import findings_of, written

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


# (fixture, rank-1 code, a substring of its evidence, its first fix's exact command or None)
CASES = [
    # the SDK refuses to build a client without a key: nothing was sent, so no server rejected anything
    ("client-finrobot-openai-no-api-key.log", "access.key_missing", "The api_key client option must be set",
     "read -rs OPENAI_API_KEY && export OPENAI_API_KEY"),
    ("client-llmvm-openai-0.28-no-api-key.log", "access.key_missing", "No API key provided.", "read -rs OPENAI_API_KEY && export OPENAI_API_KEY"),
    # h11's ChunkedReader: the streamed answer ended before its last chunk
    ("client-jrdev-httpx-incomplete-chunked-read.log", "access.streaming_broken", "(incomplete chunked read)", None),
    # OkHttp's whole-call timeout, as LangChain4j's Ollama client hits it on a long streamed answer
    ("client-langchain4j-okhttp-timeout.log", "access.timeout", "Caused by: java.io.InterruptedIOException: timeout", None),
    # the status of an error answer as the client quotes it: Claude Code's "API Error (529 {...})", llama-server's body
    ("client-claude-code-529-overloaded.log", "access.server_error", "API Error (529", None),
    ("client-llama-server-500-image-unsupported.log", "access.server_error", '{"code":500,', None),
    # a stream held back by a proxy, told in prose (no client raises an error for it): nginx's own setting
    ("client-prose-nginx-buffers-event-stream.log", "access.streaming_broken", "nginx buffers event stream responses", "proxy_buffering off;"),
    ("client-prose-cloudflare-proxy-buffers-sse.log", "access.streaming_broken", "attempts to buffer the request", "proxy_buffering off;"),
    ("client-prose-sse-frames-sit-in-proxy-buffer.log", "access.streaming_broken", "sit in the proxy buffer", "proxy_buffering off;"),
]


@pytest.mark.parametrize(("name", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_rank_one(name: str, code: str, evidence: str, command: str | None) -> None:
    found = findings_of(LOGS / name)
    assert found and found[0].code == code, [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence
    assert found[0].fixes[0].command == command


def test_key_missing_names_the_sdk_variable_when_the_message_does_not(tmp_path: Path) -> None:
    # anthropic-sdk-python src/anthropic/_client.py (v0.30.0) _validate_headers: the message names no variable
    line = ('TypeError: "Could not resolve authentication method. Expected either api_key or auth_token to be set. '
            'Or for one of the `X-Api-Key` or `Authorization` headers to be explicitly omitted"\n')
    found = findings_of(written(tmp_path, line))
    assert found[0].code == "access.key_missing"
    assert found[0].fixes[0].command == "read -rs ANTHROPIC_API_KEY && export ANTHROPIC_API_KEY"


def test_a_key_the_server_refused_is_still_rejected_not_missing(tmp_path: Path) -> None:
    # openai-python's 401 for a wrong key (the server did get a key)
    line = ("openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-abc*****xyz. "
            "You can find your API key at https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error', "
            "'param': None, 'code': 'invalid_api_key'}}\n")
    assert findings_of(written(tmp_path, line))[0].code == "access.key_rejected"


def test_a_body_cut_short_of_its_content_length_is_no_stream(tmp_path: Path) -> None:
    # h11 ContentLengthReader.read_eof (v0.14.0): a plain JSON answer cut short, not a stream
    line = "httpx.RemoteProtocolError: peer closed connection without sending complete message body (received 512 bytes, expected 2048)\n"
    assert findings_of(written(tmp_path, line))[0].code == "access.response_invalid"


def test_a_client_tools_catch_all_leaves_the_cause_to_the_servers_own_line() -> None:
    # Cline's lmstudio.ts catch-all names no cause: LM Studio's [ERROR] line is the failure quoted
    found = findings_of(LOGS / "client-cline-lmstudio-context-overflow.log")
    assert found[0].code == "access.unrecognized_failure"
    assert "Trying to keep the first 10136 tokens" in found[0].title
    assert not any(f.code.startswith("load.") for f in found)


def test_an_anthropic_error_answer_keeps_its_status(tmp_path: Path) -> None:
    # Claude Code prints the API's answer after "API Error": the status decides the code
    line = 'API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}\n'
    assert findings_of(written(tmp_path, line))[0].code == "access.key_rejected"
    line = ('API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has '
            'exceeded your per-minute rate limit"}}\n')
    assert findings_of(written(tmp_path, line))[0].code == "access.rate_limited"


def test_a_clients_failure_no_rule_knows_is_the_access_layers() -> None:
    # decided by what the input is (Claude Code's "API Error: 400" around a vLLM context-length refusal), not load.*
    found = findings_of(LOGS / "client-claude-code-proxy-400-context-length.log")
    assert found[0].code == "access.unrecognized_failure"
    assert any("API Error: 400" in line for line in found[0].evidence)


@pytest.mark.parametrize(("named", "command"), [
    ("nginx.ingress.kubernetes.io/proxy-body-size: 200M", 'nginx.ingress.kubernetes.io/proxy-buffering: "off"'),
    ("the API is served through Cloudflare", "Cache-Control: no-cache, no-transform"),
    ("reverse_proxy localhost:8000 (Caddy)", "flush_interval -1"),
    ("", "proxy_buffering off;"),
])
def test_a_buffered_stream_is_fixed_in_the_named_proxys_own_setting(tmp_path: Path, named: str, command: str) -> None:
    # xorbitsai/xagent#1358's title, with the proxy named (or not) on another line
    found = findings_of(written(tmp_path, f"{named}\na2a SSE stream is buffered by the shipped deployment\n"))
    assert found[0].code == "access.streaming_broken"
    assert found[0].fixes[0].command == command
    assert any("is buffered" in line for line in found[0].evidence)


@pytest.mark.parametrize("advice", [
    # dpskvn/express-sse#23, tachyonmcp/tachyon#52, fanout/django-eventstream#37: the fix described, no failure stated
    "Nginx buffering can prevent SSE responses from being sent in real-time.  Adding 'X-Accel-Buffering: no;' to the "
    "response header will disable buffering for SSE.",
    "This instructs reverse proxies (such as nginx) to disable response buffering, ensuring that SSE events are delivered "
    "to clients immediately rather than being held in a buffer.",
    "This allows you to use nginx proxy buffering and still have working SSE.",
])
def test_advice_about_buffering_is_no_broken_stream(tmp_path: Path, advice: str) -> None:
    assert not [f for f in findings_of(written(tmp_path, advice + "\n")) if f.code == "access.streaming_broken"]


@pytest.mark.parametrize(("name", "quoted"), [
    # a known engine only named in a sentence, no engine seen starting: the client's urlopen() raised it
    ("client-sglang-frontend-urlopen-cafile.log", "urlopen() got an unexpected keyword argument 'cafile'"),
    # the answer a client received, as a JSON body with its status (Cline through OpenRouter)
    ("client-cline-openrouter-400-json.log", '"status":400'),
])
def test_who_raised_an_unknown_failure_decides_its_layer(name: str, quoted: str) -> None:
    found = findings_of(LOGS / name)
    assert found[0].code == "access.unrecognized_failure", [f.code for f in found]
    assert any(quoted in line for line in found[0].evidence)
    assert not any(f.code.startswith("load.") for f in found)


def test_an_engine_seen_starting_owns_an_unknown_failure(tmp_path: Path) -> None:
    # the same client-side exception after vLLM's own start-up line: the engine's log, the load layer's
    start = "(APIServer pid=1671) INFO 09-04 01:02:21 [api_server.py:1805] vLLM API server version 0.10.1.1\n"  # shared/real/vllm-startup
    found = findings_of(written(tmp_path, start + (LOGS / "client-sglang-frontend-urlopen-cafile.log").read_text()))
    assert found[0].code == "load.unrecognized_failure"


@pytest.mark.parametrize(("name", "twice", "fix"), [
    # an Anthropic client whose base URL ends in /v1 asks the server's access log for /api/v1/v1/messages
    ("client-lmarenabridge-anthropic-v1-v1-messages.log", "(/v1/v1/)", "Remove the trailing /v1 from the base URL"),
    # a client adding its own /v1 to an API under /v4 (the 404's JSON body quotes the path)
    ("client-mybrain-v4-v1-chat-completions.log", "(/v4/v1/)", "The API lives under /v4"),
])
def test_a_404_on_a_path_with_two_versions_is_the_base_url(name: str, twice: str, fix: str) -> None:
    found = findings_of(LOGS / name)
    assert found[0].code == "access.base_url_invalid", [f.code for f in found]
    assert twice in found[0].title
    assert found[0].fixes[0].summary.startswith(fix)


def test_a_base_url_ending_in_the_endpoint_path_is_cut_back_to_the_api_root() -> None:
    found = findings_of(LOGS / "client-cline-base-url-with-chat-completions.log")
    assert found[0].code == "access.base_url_invalid"
    assert found[0].title.startswith("the base URL ends in the endpoint path (/v1/chat/completions)")
    assert found[0].fixes[0].command == "OPENAI_BASE_URL=https://api.hyperbolic.xyz/v1"


# SGLang's warm-up request to its own port, sent through HTTP_PROXY (sgl-project/sglang#9183): urllib3's debug line names
# the proxy's connection and the request's absolute URL (connectionpool.py `'%s://%s:%s "%s %s %s" %s %s'`)
PROXIED = ('[2025-08-13 11:01:03] http://10.0.0.7:3138 "GET http://0.0.0.0:25600/get_model_info HTTP/1.1" {status} 3582\n')


def test_a_proxied_request_the_proxy_refuses_is_proxy_failed(tmp_path: Path) -> None:
    found = findings_of(written(tmp_path, "[2025-08-13 11:01:02] INFO:     Uvicorn running on http://0.0.0.0:25600\n"
                                          + PROXIED.format(status=403)))
    assert found[0].code == "access.proxy_failed"
    assert found[0].evidence[0].endswith('"GET http://0.0.0.0:25600/get_model_info HTTP/1.1" 403 3582')
    assert found[0].fixes[0].command == "export NO_PROXY=0.0.0.0,localhost,127.0.0.1"  # the target's host, not the proxy's


@pytest.mark.parametrize("line", [
    PROXIED.format(status=200),  # the proxy passed it on
    '[2025-08-13 11:01:03] http://0.0.0.0:25600 "GET /get_model_info HTTP/1.1" 403 3582\n',  # a direct request: the server's answer
])
def test_a_proxied_answer_or_a_direct_refusal_is_no_proxy_failure(tmp_path: Path, line: str) -> None:
    assert "access.proxy_failed" not in [f.code for f in findings_of(written(tmp_path, line))]


# uvicorn's access log as vLLM's OpenAI server writes it (vllm/entrypoints/openai/api_server.py has no /generate route)
SERVED = ('INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n'
          'INFO:     127.0.0.1:55504 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')


@pytest.mark.parametrize(("line", "route"), [
    ('INFO:     127.0.0.1:59820 - "POST /generate HTTP/1.1" 404 Not Found', "POST /generate"),  # TGI's or SGLang's native API
    ('INFO:     127.0.0.1:59820 - "GET /generate HTTP/1.1" 404 Not Found', "GET /generate"),
    ('INFO:     127.0.0.1:59820 - "POST /v1/engines/davinci/completions HTTP/1.1" 404 Not Found', "POST /v1/engines/davinci/completions"),
])
def test_an_api_call_to_a_route_the_server_lacks_is_the_base_url(tmp_path: Path, line: str, route: str) -> None:
    found = findings_of(written(tmp_path, SERVED + line + "\n"))
    assert found[0].code == "access.base_url_invalid"
    assert found[0].title.startswith(f"the server has no route for {route} (404)")
    assert found[0].evidence[0].endswith(line)
    assert "base URL http://<host>:<port>/v1" in found[0].fixes[0].summary


@pytest.mark.parametrize("line", [
    'INFO:     127.0.0.1:59820 - "GET /favicon.ico HTTP/1.1" 404 Not Found',  # a browser opened the server's address
    'INFO:     127.0.0.1:59820 - "GET / HTTP/1.1" 404 Not Found',
])
def test_a_browsers_404_is_no_failure_of_the_channel(tmp_path: Path, line: str) -> None:
    assert "access.base_url_invalid" not in [f.code for f in findings_of(written(tmp_path, SERVED + line + "\n"))]
