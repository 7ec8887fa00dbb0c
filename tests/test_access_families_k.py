"""The access families read from the clients' own sources (round k): a stream answered with something that
is no event stream, in the words of openai-node, @microsoft/fetch-event-source and httpx-sse (each
version's wording); Azure OpenAI's answer for a deployment it does not have; and a person's sentence that
names an access failure, which is that failure, not an unrecognised one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis import assert_rank_one, findings_of, written


@pytest.mark.parametrize(("name", "lines", "evidence"), [
    # openai-node src/streaming.ts logs the event's data before it rethrows JSON.parse's error
    ("openai_node_sse", ["Could not parse message into JSON: : OPENROUTER PROCESSING",
                         "From chunk: [ 'data: : OPENROUTER PROCESSING' ]"], "Could not parse message into JSON"),
    ("fetch_event_source", ["Error: Expected content-type to be text/event-stream, Actual: application/json"],
     "Expected content-type to be text/event-stream"),
    # httpx-sse 0.4.0+ and 0.1.0-0.3.1
    ("httpx_sse_new", ["httpx_sse._exceptions.SSEError: Expected response header Content-Type to contain 'text/event-stream', "
                       "got 'application/json'"], "to contain 'text/event-stream'"),
    ("httpx_sse_old", ["httpx_sse._exceptions.SSEError: Expected response Content-Type to be 'text/event-stream', got 'text/html'"],
     "to be 'text/event-stream'"),
])
def test_an_answer_that_is_no_event_stream_is_streaming_broken(tmp_path: Path, name: str, lines: list[str], evidence: str) -> None:
    assert_rank_one(tmp_path, name, lines, "access.streaming_broken", evidence, None)
    top = findings_of(tmp_path / f"{name}.log")[0]
    assert top.title.startswith("the stream: true answer is not a valid event stream")


def test_azure_deployment_not_found_is_the_model(tmp_path: Path) -> None:
    line = ("openai.NotFoundError: Error code: 404 - {'error': {'code': 'DeploymentNotFound', 'message': 'The API deployment "
            "for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment "
            "and try again.'}}")
    assert_rank_one(tmp_path, "azure", [line], "access.model_not_found", "DeploymentNotFound", None)


@pytest.mark.parametrize(("text", "code"), [
    ("Streaming doesn't work behind nginx, the whole response is returned at the end.", "access.streaming_broken"),
    ("The stream hangs after the first few tokens.", "access.streaming_broken"),
    ("I get a timeout error when calling the endpoint.", "access.timeout"),
])
def test_a_sentence_naming_an_access_failure_is_that_failure(tmp_path: Path, text: str, code: str) -> None:
    codes = [f.code for f in findings_of(written(tmp_path, text + "\n"))]
    assert codes[0] == code, codes
    assert "load.unrecognized_failure" not in codes and "access.unrecognized_failure" not in codes


def test_a_sentence_naming_no_known_failure_stays_unrecognised(tmp_path: Path) -> None:
    codes = [f.code for f in findings_of(written(tmp_path, "The server crashes after an hour of serving.\n"))]
    assert codes[0] == "load.unrecognized_failure", codes


@pytest.mark.parametrize(("name", "line"), [
    # one-api v0.5.0-v0.6.9 middleware/distributor.go, as openai-python and Claude Code relay its 503
    ("one_api_sdk", "openai.APIStatusError: Error code: 503 - {'error': {'message': '当前分组 default 下对于模型 gpt-4o-mini 无可用渠道 "
                    "(request id: 2024061012345678)', 'type': 'one_api_error'}}"),
    ("one_api_bare", "Error: 503 当前分组 default 下对于模型 gpt-4o-mini 无可用渠道"),
    # new-api's two wordings (middleware/distributor.go)
    ("new_api", '{"error":{"message":"分组 default 下模型 gpt-4o-mini 无可用渠道（distributor）","type":"new_api_error","code":"model_not_found"}}'),
    ("new_api_select", 'API Error: 503 {"error":{"message":"获取分组 default 下模型 gpt-4o-mini 的可用渠道失败（数据库一致性已被破坏，'
                       'distributor）: no channel","type":"new_api_error"}}'),
])
def test_a_relay_without_a_channel_for_the_model_is_model_not_found(tmp_path: Path, name: str, line: str) -> None:
    assert_rank_one(tmp_path, name, [line], "access.model_not_found", "gpt-4o-mini", None)
    codes = [f.code for f in findings_of(tmp_path / f"{name}.log")]
    assert "access.server_error" not in codes[: codes.index("access.model_not_found")], codes


@pytest.mark.parametrize(("name", "line", "evidence"), [
    # the DeepSeek API's 400, as openai-python and openai-node raise it
    ("deepseek_py", "openai.BadRequestError: Error code: 400 - {'error': {'message': 'Model Not Exist', 'type': "
                    "'invalid_request_error', 'param': None, 'code': 'invalid_request_error'}}", "Model Not Exist"),
    ("deepseek_node", "Error: 400 Model Not Exist", "Model Not Exist"),
    # Fireworks AI's 404, and the Mistral API's 400 (type invalid_model)
    ("fireworks", '{"error": {"message": "Model not found, inaccessible, and/or not deployed", "param": "model", "code": "NOT_FOUND"}}',
     "inaccessible"),
    ("mistral", '{"object":"error","message":"Invalid model: mistral-large-x","type":"invalid_model","param":null,"code":"1500"}',
     "invalid_model"),
])
def test_a_provider_that_does_not_serve_the_model_says_so_in_its_words(tmp_path: Path, name: str, line: str, evidence: str) -> None:
    assert_rank_one(tmp_path, name, [line], "access.model_not_found", evidence, None)


@pytest.mark.parametrize("text", [
    "With streaming enabled, the UI waits until the full answer is generated and then displays everything.",
    "Streaming responses are delayed until the end of generation when going through the proxy.",
    "SSE events are not flushed until the response completes.",
    "the response is cut off mid-stream",
    "the stream ends without [DONE]",
])
def test_a_stream_held_back_or_cut_told_in_words_is_streaming_broken(tmp_path: Path, text: str) -> None:
    codes = [f.code for f in findings_of(written(tmp_path, text + "\n"))]
    assert codes[0] == "access.streaming_broken", codes


@pytest.mark.parametrize("text", [
    "The streaming continues until the end of generation.",
    "I enabled streaming and tokens arrive one by one until the end.",
])
def test_a_healthy_stream_told_in_words_states_no_failure(tmp_path: Path, text: str) -> None:
    codes = [f.code for f in findings_of(written(tmp_path, text + "\n"))]
    assert "access.streaming_broken" not in codes, codes


@pytest.mark.parametrize(("name", "line", "title"), [
    # the OpenAI API's 400 (as a gateway relays it) and a pydantic server's (vLLM) for a Responses body at /chat/completions
    ("openai_messages", '{"error":{"message":"Missing required parameter: \'messages\'.","type":"invalid_request_error","param":"messages"}}',
     "a Responses API body"),
    ("vllm_messages", "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': \"[{'type': 'missing', 'loc': ('body', "
                      "'messages'), 'msg': 'Field required', 'input': {'model': 'x', 'input': 'hi'}}]\", 'type': 'BadRequestError'}",
     "a Responses API body"),
    # and a Chat Completions body at /responses
    ("openai_input", '{"error":{"message":"Missing required parameter: \'input\'.","type":"invalid_request_error","param":"input"}}',
     "a Chat Completions body"),
])
def test_a_body_of_the_other_openai_api_is_protocol_mismatch(tmp_path: Path, name: str, line: str, title: str) -> None:
    assert_rank_one(tmp_path, name, [line], "access.protocol_mismatch", "Missing required parameter" if "Missing" in line else "'loc'", None)
    assert title in findings_of(tmp_path / f"{name}.log")[0].title


@pytest.mark.parametrize("line", [
    "Error: missing finish_reason for choice 0",
    "OpenAIError: missing choices[0].tool_calls[0].function.name",
])
def test_openai_node_stream_that_never_made_a_chat_completion_is_streaming_broken(tmp_path: Path, line: str) -> None:
    assert_rank_one(tmp_path, "finalize", [line], "access.streaming_broken", line.split(": ", 1)[1], None)


@pytest.mark.parametrize("text", [
    "I'm getting timeouts from vLLM when sending many requests.",
    "It always timeouts after 300s.",
])
def test_timeouts_told_in_words_are_the_request_timeout(tmp_path: Path, text: str) -> None:
    codes = [f.code for f in findings_of(written(tmp_path, text + "\n"))]
    assert codes[0] == "access.timeout", codes


HTTPX_HEADER = [
    "Traceback (most recent call last):",
    '  File "/home/u/app.py", line 12, in <module>',
    '    r = client.chat.completions.create(model="gpt-4o", messages=msgs)',
    '  File "/usr/lib/python3.11/site-packages/httpx/_models.py", line 74, in __init__',
    "    normalize_header_value(v, encoding),",
    '  File "/usr/lib/python3.11/site-packages/httpx/_utils.py", line 53, in normalize_header_value',
    '    return value.encode(encoding or "ascii")',
    "UnicodeEncodeError: 'ascii' codec can't encode character '\\u2026' in position 10: ordinal not in range(128)",
]
HTTP_CLIENT_HEADER = [
    "Traceback (most recent call last):",
    '  File "/home/u/app.py", line 8, in <module>',
    "    requests.post(url, headers={'Authorization': 'Bearer ' + key}, json=body)",
    '  File "/usr/lib/python3.11/http/client.py", line 1271, in putheader',
    "    values[i] = one_value.encode('latin-1')",
    "UnicodeEncodeError: 'latin-1' codec can't encode character '\\u201c' in position 7: ordinal not in range(256)",
]


@pytest.mark.parametrize(("name", "lines"), [("httpx", HTTPX_HEADER), ("http_client", HTTP_CLIENT_HEADER)])
def test_a_header_value_the_client_cannot_encode_is_a_malformed_key(tmp_path: Path, name: str, lines: list[str]) -> None:
    assert_rank_one(tmp_path, name, lines, "access.key_malformed", "UnicodeEncodeError", None)


def test_a_unicode_error_raised_elsewhere_is_no_key(tmp_path: Path) -> None:
    lines = ["Traceback (most recent call last):", '  File "/home/u/app.py", line 3, in <module>', "    print(text)",
             "UnicodeEncodeError: 'ascii' codec can't encode character '\\u2026' in position 10: ordinal not in range(128)"]
    codes = [f.code for f in findings_of(written(tmp_path, "\n".join(lines) + "\n"))]
    assert "access.key_malformed" not in codes, codes


@pytest.mark.parametrize(("name", "line", "evidence"), [
    # httpx _urlparse.py: a newline read with the base URL, a host that is no IPv4 address, a path without its '/'
    ("httpx_control", "httpx.InvalidURL: Invalid non-printable ASCII character in URL", "non-printable"),
    ("httpx_ipv4", "httpx.InvalidURL: Invalid IPv4 address: '192.168.1.300'", "Invalid IPv4 address"),
    ("httpx_path", "httpx.InvalidURL: For absolute URLs, path must be empty or begin with '/'", "path must be empty"),
    # the scheme looked up as a host (node, Go)
    ("enotfound_http", "Error: getaddrinfo ENOTFOUND http", "ENOTFOUND http"),
    ("go_lookup_http", 'Post "http://http//localhost:11434/api/chat": dial tcp: lookup http on 127.0.0.53:53: no such host', "lookup http"),
])
def test_a_base_url_the_client_cannot_use_is_base_url_invalid(tmp_path: Path, name: str, line: str, evidence: str) -> None:
    assert_rank_one(tmp_path, name, [line], "access.base_url_invalid", evidence, None)


def test_a_host_named_like_a_scheme_is_still_dns(tmp_path: Path) -> None:
    assert_rank_one(tmp_path, "httpbin", ["Error: getaddrinfo ENOTFOUND httpbin.org"], "access.dns_failed", "httpbin.org", None)


@pytest.mark.parametrize("line", [
    'INFO:     127.0.0.1:5000 - "POST /v1/chat/completions/chat/completions HTTP/1.1" 404 Not Found',
    "Error: Invalid URL (POST /v1/chat/completions/chat/completions)",
])
def test_the_endpoint_twice_in_the_path_is_the_base_url(tmp_path: Path, line: str) -> None:
    assert_rank_one(tmp_path, "twice", [line], "access.base_url_invalid", "/chat/completions/chat/completions", None)
    assert findings_of(tmp_path / "twice.log")[0].title.startswith("the requested path repeats the endpoint (/chat/completions)")


@pytest.mark.parametrize(("name", "line", "evidence"), [
    # urllib3's ProxySchemeUnknown (both wordings), requests' InvalidProxyURL, https-proxy-agent's CONNECT left unanswered
    ("no_scheme", "urllib3.exceptions.ProxySchemeUnknown: Proxy URL had no scheme, should start with http:// or https://", "had no scheme"),
    ("socks", "urllib3.exceptions.ProxySchemeUnknown: Proxy URL had unsupported scheme socks5h, should use http:// or https://",
     "unsupported scheme socks5h"),
    ("requests", "requests.exceptions.InvalidProxyURL: Please check proxy URL. It is malformed and could be missing the host.",
     "Please check proxy URL"),
    ("agent", "Error: Proxy connection ended before receiving CONNECT response", "before receiving CONNECT response"),
])
def test_a_proxy_the_client_cannot_use_is_proxy_failed(tmp_path: Path, name: str, line: str, evidence: str) -> None:
    assert_rank_one(tmp_path, name, [line], "access.proxy_failed", evidence, None)


@pytest.mark.parametrize(("name", "line", "evidence"), [
    # one-api's 403s for a key or account out of quota (relay/controller/helper.go, model/token.go), inside openai-python's
    # PermissionDeniedError and bare
    ("one_api_user", "openai.PermissionDeniedError: Error code: 403 - {'error': {'message': 'user quota is not enough (request id: "
                     "2024)', 'type': 'one_api_error', 'param': '', 'code': 'insufficient_user_quota'}}", "user quota is not enough"),
    ("one_api_token", 'Error: 403 {"error":{"message":"该令牌额度已用尽","type":"one_api_error","code":"pre_consume_token_quota_failed"}}',
     "该令牌额度已用尽"),
])
def test_a_relay_key_out_of_quota_is_quota_not_the_key(tmp_path: Path, name: str, line: str, evidence: str) -> None:
    assert_rank_one(tmp_path, name, [line], "access.quota_exceeded", evidence, None)


def test_a_403_that_states_no_cause_stays_the_key(tmp_path: Path) -> None:
    line = "openai.PermissionDeniedError: Error code: 403 - {'detail': 'Forbidden'}"
    assert_rank_one(tmp_path, "forbidden", [line], "access.key_rejected", "Forbidden", None)
