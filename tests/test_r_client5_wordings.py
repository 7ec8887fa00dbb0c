"""Client-side failures as the clients' own sources word them, judged end to end (rank-1 code, its evidence, its title):
the wordings r-client5 covers (header values the HTTP clients refuse to send, the Responses API asked of a server
without it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.findings import Finding
from tests import analysis


def findings_of(tmp_path: Path, text: str) -> list[Finding]:
    return analysis.findings_of(analysis.written(tmp_path, text))


# (case, log text, rank-1 code, a substring of its evidence)
CASES = [
    # h11's normalize_and_validate (httpx, so the OpenAI and Anthropic SDKs): the key read with its newline
    ("h11-illegal-value", "httpx.LocalProtocolError: Illegal header value b'Bearer sk-abc123\\n'\n",
     "access.key_malformed", "Illegal header value"),
    # http.client's putheader (requests, urllib)
    ("http-client-invalid-value", "ValueError: Invalid header value b'Bearer sk-abc123\\n'\n",
     "access.key_malformed", "Invalid header value"),
    # requests >= 2.28 _validate_header_part, and < 2.28 check_header_validity
    ("requests-2.28", "requests.exceptions.InvalidHeader: Invalid leading whitespace, reserved character(s), or return "
     "character(s) in header value: 'Bearer sk-abc123\\n'\n", "access.key_malformed", "Invalid leading whitespace"),
    ("requests-2.27", "requests.exceptions.InvalidHeader: Invalid return character or leading space in header: Authorization\n",
     "access.key_malformed", "in header: Authorization"),
    # Go's Transport.roundTrip, both wordings
    ("go-new", 'Post "https://api.openai.com/v1/chat/completions": net/http: invalid header field value for "Authorization"\n',
     "access.key_malformed", "invalid header field value"),
    ("go-old", 'Post https://api.openai.com/v1/chat/completions: net/http: invalid header field value "Bearer sk-a\\n" for key Authorization\n',
     "access.key_malformed", "for key Authorization"),
    # node:http's ERR_INVALID_CHAR (node-fetch, axios)
    ("node-invalid-char", 'TypeError [ERR_INVALID_CHAR]: Invalid character in header content ["Authorization"]\n'
     "    at ClientRequest.setHeader (node:_http_outgoing:651:3)\n", "access.key_malformed", "Invalid character in header content"),
    # the SDK's Responses call answered by a route miss that names no path
    ("responses-call-404", 'resp = client.responses.create(model="qwen", input="hi")\n'
     "openai.NotFoundError: Error code: 404 - {'detail': 'Not Found'}\n", "access.protocol_mismatch", "Not Found"),
    # node-fetch's FetchError around a socket error (src/index.js)
    ("node-fetch-reset", "FetchError: request to http://10.0.0.5:8000/v1/models failed, reason: read ECONNRESET\n",
     "access.connect_failed", "read ECONNRESET"),
    # OkHttp's createTunnel (ConnectPlan.kt): the proxy's answer to CONNECT
    ("okhttp-connect-403", "java.io.IOException: Unexpected response code for CONNECT: 403\n", "access.proxy_failed",
     "Unexpected response code for CONNECT"),
    ("okhttp-proxy-auth", "java.io.IOException: Failed to authenticate with proxy\n", "access.proxy_failed",
     "Failed to authenticate with proxy"),
    # System.Text.Json and Gson on a body that is not JSON
    ("dotnet-html", "System.Text.Json.JsonException: '<' is an invalid start of a value. Path: $ | LineNumber: 0 | "
     "BytePositionInLine: 0.\n", "access.response_invalid", "invalid start of a value"),
    ("gson-string", "com.google.gson.JsonSyntaxException: java.lang.IllegalStateException: Expected BEGIN_OBJECT but was "
     "STRING at line 1 column 1 path $\n", "access.response_invalid", "Expected BEGIN_OBJECT"),
    # a body its Content-Encoding misdescribes (urllib3, zlib under httpx, aiohttp, Bun): the answer, or a stream being read
    ("urllib3-decode", "requests.exceptions.ContentDecodingError: ('Received response with content-encoding: gzip, but failed "
     "to decode it.', error('Error -3 while decompressing data: incorrect header check'))\n", "access.response_invalid",
     "failed to decode it"),
    ("aiohttp-decode", "aiohttp.client_exceptions.ClientPayloadError: 400, message='Can not decode content-encoding: gzip'\n",
     "access.response_invalid", "Can not decode content-encoding"),
    ("bun-decode-stream", "Decompression error: ZlibError while streaming the SSE answer\n", "access.streaming_broken",
     "Decompression error: ZlibError"),
    ("codex-wire-api-404", 'wire_api = "responses"\nunexpected status 404 Not Found: {"detail":"Not Found"}\n',
     "access.protocol_mismatch", "Not Found"),
]


@pytest.mark.parametrize(("name", "text", "code", "evidence"), CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path: Path, name: str, text: str, code: str, evidence: str) -> None:
    found = findings_of(tmp_path, text)
    assert found and found[0].code == code, [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence


def test_responses_title_and_fix(tmp_path: Path) -> None:
    found = findings_of(tmp_path, 'HTTP Request: POST http://localhost:8000/v1/responses "HTTP/1.1 404 Not Found"\n'
                                  "openai.NotFoundError: Error code: 404 - {'detail': 'Not Found'}\n")
    assert found[0].code == "access.protocol_mismatch"
    assert "Responses API" in found[0].title
    assert "client.chat.completions.create" in found[0].fixes[0].summary


def test_pathless_404_without_a_responses_call_stays_the_base_url(tmp_path: Path) -> None:
    found = findings_of(tmp_path, "openai.NotFoundError: Error code: 404 - {'detail': 'Not Found'}\n")
    assert found[0].code == "access.base_url_invalid"


PROXIED = ("FetchError: request to https://llm.corp.example/v1/models failed, reason: read ECONNRESET\n"
           "  - HTTPS_PROXY=http://proxy.corp.example:8080\n")


def test_reset_through_the_environments_proxy(tmp_path: Path) -> None:
    found = findings_of(tmp_path, PROXIED + "  - no_proxy=localhost\n")
    assert found[0].code == "access.proxy_failed"
    assert "proxy from the environment: http://proxy.corp.example:8080" in found[0].evidence
    assert "NO_PROXY=localhost" in found[0].evidence


@pytest.mark.parametrize("exempt", ["llm.corp.example", ".corp.example", "corp.example", "*"])
def test_no_proxy_exempting_the_host_keeps_the_connection_failure(tmp_path: Path, exempt: str) -> None:
    found = findings_of(tmp_path, PROXIED + f"  - NO_PROXY={exempt}\n")
    assert found[0].code == "access.connect_failed"


def test_decode_title_and_fix(tmp_path: Path) -> None:
    found = findings_of(tmp_path, "httpx.DecodingError: Error -3 while decompressing data: incorrect header check\n")
    assert found[0].code == "access.response_invalid"
    assert "Content-Encoding" in found[0].title
    assert "drop Content-Encoding" in found[0].fixes[0].summary
