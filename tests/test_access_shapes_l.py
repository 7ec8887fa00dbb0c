"""The access failures read from the clients' and servers' own wordings (round l): the JSON parsers of the runtimes a
client runs on (V8 before and since 11.x, SpiderMonkey, JavaScriptCore, Go encoding/json, Jackson, serde_json) on a body
that is not the API's JSON; the same parsers on a stream (the `data: [DONE]` terminator parsed, an event cut across two
reads); a server's own answer for a route it does not serve (LM Studio's 200 "Unexpected endpoint or method", vLLM's
uvicorn access log)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.collect import RunOptions
from llm_doctor.collect.endpoint import probe
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.facts import Facts
from llm_doctor.report import Report, build_report
from llm_doctor.settings import resolve
from tests.analysis import assert_rank_one, findings_of, written
from tests.servers.http import FakeServer, Reply, Request
from tests.servers.openai_like import VllmLike

MODEL = "qwen/qwen3-4b"


@pytest.mark.parametrize(("name", "line", "evidence"), [
    ("v8_unterminated", "SyntaxError: Unterminated string in JSON at position 258", "Unterminated string"),
    ("v8_comma", "SyntaxError: Expected ',' or '}' after property value in JSON at position 2048 (line 1 column 2049)", "after property value"),
    ("v8_two_values", "SyntaxError: Unexpected non-whitespace character after JSON at position 131 (line 2 column 1)", "non-whitespace"),
    ("v8_old_token", "SyntaxError: Unexpected token I in JSON at position 0", "Unexpected token I"),
    ("v8_short", "SyntaxError: Unexpected token 'N', \"Not Found\" is not valid JSON", "is not valid JSON"),
    ("firefox", "Error: JSON.parse: unexpected character at line 1 column 1 of the JSON data", "JSON.parse: unexpected character"),
    ("safari", "SyntaxError: JSON Parse error: Unrecognized token '<'", "JSON Parse error"),
    ("go", "Error: invalid character '<' looking for beginning of value", "looking for beginning of value"),
    ("jackson", "com.fasterxml.jackson.core.JsonParseException: Unexpected character ('<' (code 60)): expected a valid value "
                "(JSON String, Number, Array, Object or token 'null', 'true' or 'false')", "expected a valid value"),
    ("serde", "serde json error: expected value at line 1 column 1", "expected value at line 1"),
    ("serde_enum", "[LLM] serde json error: data did not match any variant of untagged enum OpenAIAPIResponse", "OpenAIAPIResponse"),
])
def test_a_body_the_json_parser_refuses_is_response_invalid(tmp_path: Path, name: str, line: str, evidence: str) -> None:
    assert_rank_one(tmp_path, name, [line], "access.response_invalid", evidence, None)


def test_a_tokenizer_enum_stays_the_engines(tmp_path: Path) -> None:
    """transformers' tokenizer.json from a newer tokenizers: the same serde message, an enum that is no response."""
    line = "Exception: data did not match any variant of untagged enum ModelWrapper at line 250373 column 3"
    codes = [f.code for f in findings_of(written(tmp_path, line + "\n"))]
    assert codes[0] == "load.engine_outdated", codes


@pytest.mark.parametrize(("name", "line"), [
    ("v8_old", "error - SyntaxError: Unexpected token D in JSON at position 1"),
    ("v8_new", "SyntaxError: Unexpected token 'D', \"[DONE]\" is not valid JSON"),
    ("python", "json.decoder.JSONDecodeError: Expecting value: line 1 column 2 (char 1)"),
])
def test_the_done_terminator_parsed_as_json_is_streaming_broken(tmp_path: Path, name: str, line: str) -> None:
    lines = [line, "    at JSON.parse (<anonymous>)", "    at onParse (webpack-internal:///(middleware)/./utils/server/index.ts:70:43)"]
    assert_rank_one(tmp_path, name, lines, "access.streaming_broken", "JSON", None)
    top = findings_of(tmp_path / f"{name}.log")[0]
    assert "[DONE]" in top.title and "[DONE]" in top.fixes[0].summary


def test_an_event_cut_across_reads_is_streaming_broken(tmp_path: Path) -> None:
    """The Mistral JS client's chatStream JSON.parses each network read: a chunk split in two is cut JSON."""
    lines = ['{"id": "cmpl-794d", "object": "chat.completion.chunk", "created": 1702672109, "choices": [{"index": 0, "delta": {"content": " best',
             "SyntaxError: Unterminated string in JSON at position 258",
             "    at JSON.parse (<anonymous>)",
             "    at MistralClient.chatStream (file:///Users/u/mistral-client-js/src/client.js:184:24)"]
    assert_rank_one(tmp_path, "split", lines, "access.streaming_broken", "Unterminated string", None)
    assert "split across two reads" in findings_of(tmp_path / "split.log")[0].title


def test_the_same_cut_json_without_a_stream_is_response_invalid(tmp_path: Path) -> None:
    assert_rank_one(tmp_path, "cut", ["SyntaxError: Unterminated string in JSON at position 258"], "access.response_invalid",
                    "Unterminated string", None)


@pytest.mark.parametrize(("name", "line", "code"), [
    ("no_v1", '{"error":"Unexpected endpoint or method. (POST /chat/completions)"}', "access.base_url_invalid"),
    ("log_line", "2025-08-28 10:00:01 [ERROR] Unexpected endpoint or method. (GET /models). Returning 200 anyway", "access.base_url_invalid"),
    # Ollama's native API sent to LM Studio: the client speaks another API
    ("ollama_api", "Unexpected endpoint or method. (POST /api/chat)", "access.protocol_mismatch"),
])
def test_lm_studio_answers_a_route_it_lacks(tmp_path: Path, name: str, line: str, code: str) -> None:
    assert_rank_one(tmp_path, name, [line], code, "Unexpected endpoint or method", None)


def test_lm_studio_browser_requests_are_no_api_call(tmp_path: Path) -> None:
    """A browser's favicon and CORS preflight are logged with the same words; no API call went astray."""
    lines = ["2026-07-04 16:17:38 [ERROR] Unexpected endpoint or method. (GET /favicon.ico). Returning 200 anyway",
             "2025-06-15 23:12:20 [ERROR] Unexpected endpoint or method. (OPTIONS /v1/completions). Returning 200 anyway"]
    codes = [f.code for f in findings_of(written(tmp_path, "\n".join(lines) + "\n"))]
    assert "access.base_url_invalid" not in codes and "access.protocol_mismatch" not in codes, codes


def test_a_post_to_a_route_the_server_lacks_is_the_base_url(tmp_path: Path) -> None:
    """vLLM's OpenAI server has no /generate (the demo api_server's route): its access log shows the 404s."""
    lines = ["INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
             'INFO:     127.0.0.1:55504 - "GET / HTTP/1.1" 404 Not Found',
             'INFO:     127.0.0.1:53798 - "POST /generate HTTP/1.1" 404 Not Found']
    assert_rank_one(tmp_path, "generate", lines, "access.base_url_invalid", "POST /generate", None)


def test_a_browser_get_of_an_unknown_path_alone_is_no_finding(tmp_path: Path) -> None:
    lines = ["INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
             'INFO:     127.0.0.1:55504 - "GET /favicon.ico HTTP/1.1" 404 Not Found']
    codes = [f.code for f in findings_of(written(tmp_path, "\n".join(lines) + "\n"))]
    assert "access.base_url_invalid" not in codes, codes


@pytest.mark.parametrize(("name", "lines", "evidence"), [
    # Privoxy (often HTTP_PROXY=127.0.0.1:8118): its own 500 page, and its connect-failed page for a target it cannot reach
    ("privoxy_500", ["HTTP 500 — Internal Privoxy Error", "Privoxy could not connect to the host: 127.0.0.1:11435"], "Internal Privoxy Error"),
    ("privoxy_connect", ["<title>503 - Connect failed (Privoxy@localhost)</title>",
                         "Your request for http://10.0.0.7:8000/v1/models could not be fulfilled, because the connection to 10.0.0.7 "
                         "(10.0.0.7) could not be established."], "Connect failed (Privoxy@"),
    ("tinyproxy", ["<head><title>500 Unable to connect</title></head>",
                   "<p>Tinyproxy was unable to connect to the remote web server.</p>"], "unable to connect to the remote web server"),
])
def test_a_forward_proxys_own_error_page_is_proxy_failed(tmp_path: Path, name: str, lines: list[str], evidence: str) -> None:
    assert_rank_one(tmp_path, name, lines, "access.proxy_failed", evidence, None)
    codes = [f.code for f in findings_of(tmp_path / f"{name}.log")]
    assert "access.server_error" not in codes[: codes.index("access.proxy_failed")], codes


@pytest.mark.parametrize(("name", "line"), [
    ("version", 'API returned 400: {"type":"error","error":{"type":"invalid_request_error","message":"anthropic-version: header is '
                'required"},"request_id":"req_011CaDvrymxizFC1oij4M9EK"}'),
    ("max_tokens", "Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'max_tokens: Field required'}}"),
    ("route_sdk", "openai.NotFoundError: Error code: 404 - {'type': 'error', 'error': {'type': 'not_found_error', 'message': 'Not Found'}}"),
    ("route_bare", 'Error: 404 {"type":"error","error":{"type":"not_found_error","message":"Not Found"}}'),
])
def test_an_openai_style_request_at_the_anthropic_api_is_protocol_mismatch(tmp_path: Path, name: str, line: str) -> None:
    assert_rank_one(tmp_path, name, [line], "access.protocol_mismatch", "error", None)
    top = findings_of(tmp_path / f"{name}.log")[0]
    assert top.title.startswith("the client speaks the OpenAI API") and "Anthropic provider" in top.fixes[0].summary


@pytest.mark.parametrize(("name", "line", "command"), [
    ("node_fetch_2", "TypeError: Only absolute URLs are supported", None),
    ("node_fetch_3", 'TypeError: node-fetch cannot load localhost:8000/v1/chat/completions. URL scheme "localhost" is not supported.',
     "OPENAI_BASE_URL=http://localhost:8000/v1"),
    ("okhttp", "java.lang.IllegalArgumentException: Expected URL scheme 'http' or 'https' but no colon was found", None),
])
def test_a_base_url_the_http_client_cannot_request_is_base_url_invalid(tmp_path: Path, name: str, line: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, [line], "access.base_url_invalid", line.split(": ", 1)[1][:30], command)


def test_a_cut_traceback_in_the_openai_sdk_is_the_clients(tmp_path: Path) -> None:
    """openai-python 0.x's api_requestor.py raising, cut before its exception line (a Windows paste): a client's failure,
    never the engine's."""
    lines = ["Traceback (most recent call last):",
             '  File "C:\\Users\\u\\envs\\nlp\\lib\\site-packages\\openai\\api_resources\\embedding.py", line 33, in create',
             "    response = super().create(*args, **kwargs)",
             '  File "C:\\Users\\u\\envs\\nlp\\lib\\site-packages\\openai\\api_requestor.py", line 298, in request',
             "    resp, got_stream = self._interpret_response("]
    codes = [f.code for f in findings_of(written(tmp_path, "\n".join(lines) + "\n"))]
    assert codes[0] == "access.unrecognized_failure", codes
    assert not any(c.startswith("load.") for c in codes), codes


def _lm_studio(req: Request) -> Reply:
    """LM Studio's server: its API under /v1, and any other route answered 200 with an error body (closed source; the
    body as lmstudio-bug-tracker#618 quotes it)."""
    path = req.path.split("?")[0]
    if path.startswith("/v1/"):
        return VllmLike(models=[MODEL])(req)
    return Reply(200, {"error": f"Unexpected endpoint or method. ({req.method} {path})"})


def _probed(base_url: str) -> Report:
    settings = resolve(base_url, "lm-studio", MODEL, "auto", env={}, home=Path("/nonexistent"), cwd=Path("/nonexistent"))
    facts = Facts(settings=settings.to_facts())
    facts.endpoint = probe(settings, RunOptions(layers=("access",), timeout=2.0), Deadline(30), None)
    specs = [s for s in select(load_checks(), ["access"]) if s.id != "access.client_log"]
    return build_report(run_checks(facts, specs, Deadline(30)), facts)


def test_lm_studio_without_v1_is_the_base_url_live() -> None:
    """LM Studio answers /models and /chat/completions (no /v1) with 200 and an error: the route is missing, whatever the
    status says, so the probe tries the API's usual paths and names the one that answers."""
    with FakeServer(_lm_studio) as srv:
        report = _probed(srv.url)
    top = report.findings[0]
    assert top.code == "access.base_url_invalid", [f.code for f in report.findings]
    assert [x.command for x in top.fixes if x.command][0] == f"--base-url {srv.url}/v1"
    assert "access.response_invalid" not in [f.code for f in report.findings]


def test_lm_studio_with_v1_is_healthy_live() -> None:
    with FakeServer(_lm_studio) as srv:
        report = _probed(srv.url + "/v1")
    assert [f.code for f in report.findings if f.severity == "error"] == []


WEB_UI_PAGE = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Open WebUI</title></head><body><div id="app"></div></body></html>'


def _web_ui(req: Request) -> Reply:
    """A web UI in front of a model (Open WebUI's shape): its OpenAI-compatible API under /api, and its single-page app's
    index.html for every other path, with 200."""
    path = req.path.split("?")[0]
    if path.startswith("/api/"):
        return VllmLike(models=[MODEL], prefix="/api")(req)
    return Reply(200, WEB_UI_PAGE, content_type="text/html; charset=utf-8")


def test_a_web_uis_page_at_the_base_url_is_the_base_url_live() -> None:
    with FakeServer(_web_ui) as srv:
        report = _probed(srv.url + "/v1")
    top = report.findings[0]
    assert top.code == "access.base_url_invalid", [f.code for f in report.findings]
    assert [x.command for x in top.fixes if x.command][0] == f"--base-url {srv.url}/api"
    assert any("Open WebUI" in line for line in top.evidence), top.evidence


@pytest.mark.parametrize(("name", "line", "evidence"), [
    ("reactor_netty", "reactor.netty.http.client.PrematureCloseException: Connection prematurely closed DURING response", "DURING response"),
    ("okhttp_reset", "okhttp3.internal.http2.StreamResetException: stream was reset: INTERNAL_ERROR", "stream was reset"),
])
def test_a_java_clients_stream_cut_mid_answer_is_streaming_broken(tmp_path: Path, name: str, line: str, evidence: str) -> None:
    assert_rank_one(tmp_path, name, [line], "access.streaming_broken", evidence, None)
    assert findings_of(tmp_path / f"{name}.log")[0].title.startswith("the streamed answer was cut off")


@pytest.mark.parametrize("statement", ["content = response.choices[0].message.content", 'text = data["choices"][0]["text"]'])
def test_a_statement_reading_choices_that_fails_is_response_invalid(tmp_path: Path, statement: str) -> None:
    """A relay answered 200 without a completion: the client's own line reading the answer's choices raises, and that is
    the answer's shape, never the engine's failure."""
    lines = ["Traceback (most recent call last):",
             '  File "/app/services/llm.py", line 86, in _generate_response',
             f"    {statement}",
             "              ~~~~~~~~~~~~~~~~^^^",
             "TypeError: 'NoneType' object is not subscriptable"]
    assert_rank_one(tmp_path, "choices", lines, "access.response_invalid", "not subscriptable", None)
    assert "recognised by: family: an answer without choices" in findings_of(tmp_path / "choices.log")[0].evidence


def test_the_same_error_on_another_statement_is_no_answer_shape(tmp_path: Path) -> None:
    lines = ["Traceback (most recent call last):",
             '  File "/app/worker.py", line 12, in run',
             "    size = config[0]",
             "TypeError: 'NoneType' object is not subscriptable"]
    codes = [f.code for f in findings_of(written(tmp_path, "\n".join(lines) + "\n"))]
    assert "access.response_invalid" not in codes, codes


@pytest.mark.parametrize("line", [
    # go-openai reading Go net/http's 404 body: encoding/json takes "404" for a number, then meets 'p'
    "error, status code: 404, message: invalid character 'p' after top-level value",
    "error, status code: 404, status: 404 Not Found, message: invalid character 'p' after top-level value, body: 404 page not found",
])
def test_a_parser_error_on_a_404s_route_miss_is_the_base_url(tmp_path: Path, line: str) -> None:
    assert_rank_one(tmp_path, "route_miss", [line], "access.base_url_invalid", "invalid character 'p'", None)


@pytest.mark.parametrize("text", [
    "The responses were streamed as chunks but they all arrived to the browser at the some time.",
    "最近在集成 Ollama 的流式生成功能时遇到了问题:通过 Nginx 代理后,原本应该逐字输出的回答变成了一次性完整返回。",
])
def test_a_stream_said_to_arrive_all_at_once_is_streaming_broken(tmp_path: Path, text: str) -> None:
    codes = [f.code for f in findings_of(written(tmp_path, text + "\n"))]
    assert codes[0] == "access.streaming_broken", codes


def test_two_answers_at_the_same_time_are_no_stream(tmp_path: Path) -> None:
    text = "I sent two requests and both responses came back at the same time, which is fine."
    codes = [f.code for f in findings_of(written(tmp_path, text + "\n"))]
    assert "access.streaming_broken" not in codes, codes


def test_an_ollama_client_at_an_openai_server_is_protocol_mismatch(tmp_path: Path) -> None:
    """Ollama's native routes (server/routes.go) asked of vLLM's OpenAI server: its access log shows them 404."""
    lines = ["INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
             'INFO:     172.17.0.1:40312 - "GET /api/tags HTTP/1.1" 404 Not Found',
             'INFO:     172.17.0.1:40318 - "GET /api/version HTTP/1.1" 404 Not Found']
    assert_rank_one(tmp_path, "ollama_client", lines, "access.protocol_mismatch", "/api/tags", None)
    assert findings_of(tmp_path / "ollama_client.log")[0].title.startswith("the client speaks Ollama's own API")


@pytest.mark.parametrize(("body", "code"), [
    ("{'detail': 'Not Found'}", "access.base_url_invalid"),
    ("The model `qwen3` does not exist.", "access.model_not_found"),
])
def test_litellms_model_group_trailer_names_no_model(tmp_path: Path, body: str, code: str) -> None:
    """LiteLLM's router appends 'Received Model Group=...' to every failure: the 404 body decides, as without it."""
    lines = [f"litellm.NotFoundError: NotFoundError: OpenAIException - Error code: 404 - {body} Received Model Group=qwen3",
             "Available Model Group Fallbacks=None"]
    assert_rank_one(tmp_path, "litellm", lines, code, "NotFoundError", None)


def test_a_404_answered_with_a_web_page_is_the_path(tmp_path: Path) -> None:
    """A site's front end answers a path its API lacks with its HTML 404 page: the path is wrong, not the answer."""
    line = "ProviderError: Anthropic API error (404): <!DOCTYPE html><html><head><title>404: This page could not be found</title>"
    assert_rank_one(tmp_path, "html404", [line], "access.base_url_invalid", "(404)", None)
    assert findings_of(tmp_path / "html404.log")[0].title.startswith("the server has no route at the requested path")


def test_an_anthropic_clients_404_in_the_same_envelope_is_its_base_url(tmp_path: Path) -> None:
    """Claude Code at an Anthropic endpoint whose base URL ends in /v1: the client adds /v1/messages itself."""
    lines = ["ANTHROPIC_BASE_URL=https://gateway.example.com/v1",
             'API Error: 404 {"type":"error","error":{"type":"not_found_error","message":"Not Found"}}']
    assert_rank_one(tmp_path, "claude_v1", lines, "access.base_url_invalid", "API Error: 404", "ANTHROPIC_BASE_URL=https://gateway.example.com")


@pytest.mark.parametrize(("line", "title"), [
    # vLLM/SGLang (pydantic/FastAPI): a chat body at /v1/completions
    ("openai.UnprocessableEntityError: Error code: 422 - {'detail': [{'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required', "
     "'input': {'model': 'm', 'messages': []}}]}", "sent to /completions, which reads `prompt`"),
    # TGI's router (axum + serde): a completions body at /v1/chat/completions
    ("Failed to deserialize the JSON body into the target type: missing field `messages` at line 1 column 45",
     "sent to /chat/completions, which reads `messages`"),
])
def test_the_other_endpoints_body_is_protocol_mismatch(tmp_path: Path, line: str, title: str) -> None:
    assert_rank_one(tmp_path, "body", [line], "access.protocol_mismatch", "missing", None)
    assert title in findings_of(tmp_path / "body.log")[0].title


@pytest.mark.parametrize(("streamed", "code"), [(True, "access.streaming_broken"), (False, "access.response_invalid")])
def test_a_body_cut_short_while_a_stream_is_read_is_streaming_broken(tmp_path: Path, streamed: bool, code: str) -> None:
    lines = ['  File "/venv/lib/python3.11/site-packages/openai/_streaming.py", line 72, in __stream__'] if streamed else []
    lines.append("aiohttp.client_exceptions.ClientPayloadError: Response payload is not completed: "
                 "<ContentLengthError: 400, message='Not enough data to satisfy content length header.'>")
    assert_rank_one(tmp_path, "cut_body", lines, code, "Response payload is not completed", None)


@pytest.mark.parametrize(("done", "broken"), [(True, False), (False, True)])
def test_a_quoted_stream_is_broken_only_without_its_terminator(tmp_path: Path, done: bool, broken: bool) -> None:
    """The scanner keeps that `data: [DONE]` was seen (it never did: a False default was never overwritten)."""
    chunk = 'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}'
    lines = [chunk, chunk, *(["data: [DONE]"] if done else [])]
    codes = [f.code for f in findings_of(written(tmp_path, "\n".join(lines) + "\n"))]
    assert ("access.streaming_broken" in codes) is broken, codes
