"""Client-side network failures s-cli-net covers, judged end to end (rank-1 code and its evidence), each worded as its
source words it: curl naming the proxy it could not reach, python-socks v2, hyper's IncompleteMessage, Go's read
deadline, urllib's timeout, a bare TimeoutError from asyncio.timeout entered by an HTTP client, and a body cut while a
stream was read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import analysis

ASYNCIO_TIMEOUT = (
    "Traceback (most recent call last):\n"
    '  File "/app/backend/open_webui/routers/openai.py", line 700, in generate_chat_completion\n'
    "    r = await session.request(\n"
    '  File "/usr/local/lib/python3.11/site-packages/aiohttp/client.py", line 605, in _request\n'
    "    await resp.start(conn)\n"
    '  File "/usr/local/lib/python3.11/asyncio/timeouts.py", line 115, in __aexit__\n'
    "    raise TimeoutError from exc_val\n"
    "TimeoutError\n"
)

# (name, log text, rank-1 code, a piece of its evidence)
CASES = [
    # curl lib/cf-ip-happy.c (8.16+): failf("Failed to connect to %s:%u%s %s%s%safter %ld ms: %s", ..., "over proxy ", host)
    ("curl-over-proxy", "curl: (7) Failed to connect to api.openai.com:443 over proxy 127.0.0.1 after 0 ms: Could not connect "
     "to server\n", "access.proxy_failed", "over proxy 127.0.0.1"),
    # curl lib/cf-h1-proxy.c: failf(data, "Proxy CONNECT aborted") / "Proxy CONNECT aborted due to timeout"
    ("curl-connect-aborted", "* Proxy CONNECT aborted\ncurl: (56) Proxy CONNECT aborted\n", "access.proxy_failed", "Proxy CONNECT aborted"),
    ("curl-connect-sending", "curl: (56) Failed sending CONNECT to proxy\n", "access.proxy_failed", "Failed sending CONNECT to proxy"),
    # python-socks async_/anyio/v2/_proxy.py: ProxyConnectionError(e.errno, "Couldn't connect to proxy" f" {host}:{port} [{e.strerror}]")
    ("python-socks-v2", "python_socks._errors.ProxyConnectionError: Couldn't connect to proxy 127.0.0.1:1080 [Connect call failed "
     "('127.0.0.1', 1080)]\n", "access.proxy_failed", "Couldn't connect to proxy 127.0.0.1:1080"),
    # hyper src/error.rs Kind::IncompleteMessage => "connection closed before message completed" (EOF before the response head)
    ("hyper-incomplete-message", "Error: error sending request for url (http://localhost:8000/v1/chat/completions): connection "
     "closed before message completed\n", "access.connect_failed", "connection closed before message completed"),
    # Go net.OpError{Op: "read", Net: "tcp"} with os.ErrDeadlineExceeded ("i/o timeout"), after net/http's `Post "url": `
    ("go-read-deadline", 'Error: Post "http://127.0.0.1:11434/api/chat": read tcp 127.0.0.1:54321->127.0.0.1:11434: i/o timeout\n',
     "access.timeout", "i/o timeout"),
    # CPython Lib/urllib/error.py URLError.__str__: '<urlopen error %s>' % self.reason, the reason a socket.timeout
    ("urllib-timeout", "urllib.error.URLError: <urlopen error timed out>\n", "access.timeout", "<urlopen error timed out>"),
    # Python 3.11+ asyncio/timeouts.py: `raise TimeoutError from exc_val`, the timeout aiohttp's request entered
    ("asyncio-timeout-in-aiohttp", ASYNCIO_TIMEOUT, "access.timeout", "TimeoutError"),
    # a bare asyncio.exceptions.TimeoutError whose last frame is aiohttp's own
    ("asyncio-exceptions-timeout", ASYNCIO_TIMEOUT.replace(
        '  File "/usr/local/lib/python3.11/asyncio/timeouts.py", line 115, in __aexit__\n    raise TimeoutError from exc_val\n', "")
     .replace("TimeoutError\n", "asyncio.exceptions.TimeoutError\n"), "access.timeout", "asyncio.exceptions.TimeoutError"),
    # V8's JSON.parse of half an SSE event, read with a WHATWG stream reader (reader.read() slices, not whole events)
    ("cut-json-reader-read", "const { value } = await reader.read();\nconst parsed = JSON.parse(line.slice(6));\n"
     "SyntaxError: Unterminated string in JSON at position 8064 (line 1 column 8065)\n",
     "access.streaming_broken", "Unterminated string in JSON"),
    # urllib3 response.py: ProtocolError("Connection broken: IncompleteRead(...)") while a stream=True request was read
    ("incomplete-read-stream", "resp = requests.post(url, json=body, stream=True)\nurllib3.exceptions.ProtocolError: ('Connection "
     "broken: IncompleteRead(0 bytes read, 2 more expected)', IncompleteRead(0 bytes read, 2 more expected))\n",
     "access.streaming_broken", "IncompleteRead"),
    # curl lib/http2.c: "HTTP/2 stream %u was not closed cleanly: %s (err %u)": the stream ended before its last frame
    ("curl-http2-stream", "curl: (92) HTTP/2 stream 1 was not closed cleanly: INTERNAL_ERROR (err 2)\n", "access.streaming_broken",
     "was not closed cleanly"),
]


@pytest.mark.parametrize(("name", "text", "code", "evidence"), CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path: Path, name: str, text: str, code: str, evidence: str) -> None:
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == code, [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence


def test_a_cut_body_read_whole_stays_a_bad_answer(tmp_path: Path) -> None:
    """http.client's IncompleteRead of a body with a Content-Length, no stream asked for: the answer, not a stream."""
    text = "http.client.IncompleteRead: IncompleteRead(1024 bytes read, 512 more expected)\n"
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == "access.response_invalid", [f.code for f in found]


# (name, log text, rank-1 code, a piece of its evidence): a wrapper that names no cause, beside or around the cause
WRAPPED = [
    # LiteLLM's APIConnectionError around the upstream's timeout, on one line (litellm/exceptions.py APIConnectionError)
    ("litellm-connection-error-timeout", "litellm.exceptions.APIConnectionError: litellm.APIConnectionError: OpenAIException - "
     "Request timed out.\n", "access.timeout", "Request timed out"),
    # openai-node core.ts: `throw new APIConnectionError({ cause: error })` ("Connection error."), undici's headers timeout as its cause
    ("openai-node-headers-timeout", "APIConnectionError: Connection error.\n    at OpenAI.makeRequest (/app/node_modules/openai/core.js:304:19) {\n"
     "  cause: TypeError: fetch failed\n      at node:internal/deps/undici/undici:13178:13 {\n"
     "    [cause]: HeadersTimeoutError: Headers Timeout Error\n      code: 'UND_ERR_HEADERS_TIMEOUT'\n    }\n  }\n}\n",
     "access.timeout", "Headers Timeout Error"),
    # Open WebUI routers/openai.py `log.exception(f"Connection error: {e}")` with an empty str(e): the traceback says what
    ("open-webui-connection-error", "ERROR [open_webui.routers.openai] Connection error: \n" + ASYNCIO_TIMEOUT, "access.timeout",
     "TimeoutError"),
    # the wrapper's words, then the timeout in the tool's own sentence
    ("connection-error-request-timed-out", "Error: Connection error. The request to the model timed out after 120 seconds.\n",
     "access.timeout", "timed out after 120 seconds"),
    # the wrapper alone stays the refused connection it says
    ("openai-connection-error-alone", "openai.APIConnectionError: Connection error.\n", "access.connect_failed", "Connection error."),
    # a connect timeout inside the wrapper is a connection that never opened
    ("openai-connect-timeout", "openai.APIConnectionError: Connection error.\nhttpx.ConnectTimeout: timed out\n", "access.connect_failed",
     "ConnectTimeout"),
    # reactor-core FluxTimeout.java: TimeoutException("Did not observe any item or terminal signal within " + ...)
    ("reactor-timeout", "java.util.concurrent.TimeoutException: Did not observe any item or terminal signal within 60000ms in "
     "'flatMap' (and no fallback has been configured)\n", "access.timeout", "Did not observe any item"),
    # Go net/lookup_windows.go: winError("getaddrinfow", e) for a GetAddrInfoW failure other than WSAHOST_NOT_FOUND
    ("go-getaddrinfow", 'Error: Get "http://host.docker.internal:11434/api/tags": dial tcp: lookup host.docker.internal: getaddrinfow: '
     "The requested name is valid, but no data of the requested type was found.\n", "access.dns_failed", "getaddrinfow"),
]


@pytest.mark.parametrize(("name", "text", "code", "evidence"), WRAPPED, ids=[c[0] for c in WRAPPED])
def test_a_wrapper_yields_to_the_cause_it_wraps(tmp_path: Path, name: str, text: str, code: str, evidence: str) -> None:
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == code, [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence


def test_tls_to_an_https_proxy_url_that_speaks_http_is_the_proxys(tmp_path: Path) -> None:
    """OpenSSL's WRONG_VERSION_NUMBER through `https_proxy=https://...`: the handshake was with the proxy; the fix is its URL."""
    text = ("export https_proxy=https://127.0.0.1:7890\n"
            "httpx.ConnectError: [SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)\n")
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == "access.proxy_failed", [f.code for f in found]
    assert "proxy from the environment: https://127.0.0.1:7890" in found[0].evidence
    assert found[0].fixes[0].command == "export HTTPS_PROXY=http://127.0.0.1:7890"


def test_tls_through_an_http_proxy_url_stays_the_servers(tmp_path: Path) -> None:
    text = ("export https_proxy=http://127.0.0.1:7890\n"
            "httpx.ConnectError: [SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)\n")
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == "access.tls_failed", [f.code for f in found]


def test_a_request_its_client_aborted_is_the_clients_timeout(tmp_path: Path) -> None:
    """node lib/internal/errors.js AbortError('The operation was aborted'): the client's own timer cancelled the request, and
    the gateway's 502 around it is that abort relayed."""
    text = ("The operation was aborted (custom, chat, 120s)\n502 - {\n  \"error\": {\n    \"message\": \"All 1 routed attempt(s) failed "
            "with upstream provider errors. Last error: The operation was aborted (custom, chat, 120s)\",\n"
            "    \"code\": \"upstream_failed\"\n  }\n}\n")
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == "access.timeout", [f.code for f in found]
    assert any("The operation was aborted" in line for line in found[0].evidence), found[0].evidence


def test_a_failure_tied_to_the_proxy_being_on_is_the_proxys(tmp_path: Path) -> None:
    text = "When the VPN/proxy is on, LM Studio can't be reached at localhost:1234.\n"
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == "access.proxy_failed", [f.code for f in found]
    assert any("proxy is on" in line for line in found[0].evidence), found[0].evidence


def test_a_proxy_that_is_on_and_works_states_nothing(tmp_path: Path) -> None:
    found = analysis.findings_of(analysis.written(tmp_path, "The proxy is on and everything works fine.\n"))
    assert "access.proxy_failed" not in [f.code for f in found]


def test_a_502_told_in_words_beside_the_proxy_variables_is_the_proxys(tmp_path: Path) -> None:
    """A 502 stated in a sentence where the log clears the proxy variables: the proxy answered, as for a 502 log line."""
    text = ("Streaming requests from the Python client to the local Ollama fail with a 502 Bad Gateway error.\n"
            "set http_proxy= set https_proxy=\n")
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == "access.proxy_failed", [f.code for f in found]
    assert any("502 Bad Gateway" in line for line in found[0].evidence), found[0].evidence


def test_a_502_told_in_words_without_a_proxy_stays_the_servers(tmp_path: Path) -> None:
    text = "Streaming requests from the Python client to the local Ollama fail with a 502 Bad Gateway error.\n"
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == "access.server_error", [f.code for f in found]


@pytest.mark.parametrize("text", [
    "While all functions are operating effectively, the generated text is not displayed in real-time and instead only "
    "appears at the end of the answer.\n",
    "Responses are not shown in real time anymore since we put the app behind Traefik.\n",
])
def test_a_stream_told_by_what_the_reader_no_longer_sees_is_the_stream(tmp_path: Path, text: str) -> None:
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == "access.streaming_broken", [f.code for f in found]


def test_real_time_words_about_no_output_state_no_stream_failure(tmp_path: Path) -> None:
    found = analysis.findings_of(analysis.written(tmp_path, "The dashboard shows GPU usage in real time.\n"))
    assert "access.streaming_broken" not in [f.code for f in found]


@pytest.mark.parametrize(("text", "evidence"), [
    # a client's own words for an SSE event it could not parse (WhoDB's chat page, corpus m275's family)
    ('Error: Failed to parse SSE data: {"choices":[{"delta":{"content":"hi\n', "Failed to parse SSE data"),
    # a JSONDecodeError in a line that says it was the stream's
    ("Error parsing stream chunk: json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n", "Error parsing stream chunk"),
])
def test_a_stream_event_the_client_could_not_parse_is_the_stream(tmp_path: Path, text: str, evidence: str) -> None:
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == "access.streaming_broken", [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence


DOCKER_HOST_FIX = "docker run --add-host=host.docker.internal:host-gateway ... (compose: extra_hosts: [\"host.docker.internal:host-gateway\"])"


def test_a_connect_failure_to_an_unmapped_host_docker_internal_is_the_lookup(tmp_path: Path) -> None:
    """Docker Engine on Linux resolves host.docker.internal only with --add-host ...:host-gateway; words that name no step
    past the lookup are its failure to resolve."""
    text = "docker run --rm -p 7878:7878 -e OLLAMA_HOST=http://host.docker.internal:11434 ghcr.io/wandb/openui\n" \
           "Error: cant connect to OLLAMA http://host.docker.internal:11434\n"
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == "access.dns_failed", [f.code for f in found]
    assert found[0].fixes[0].command == DOCKER_HOST_FIX


@pytest.mark.parametrize("text", [
    # the name mapped for the container: the lookup worked
    "docker run --add-host=host.docker.internal:host-gateway ghcr.io/open-webui/open-webui:main\n"
    "Error: cant connect to OLLAMA http://host.docker.internal:11434\n",
    # curl's "Failed to connect to <host> port": it resolved, then the connect failed
    "curl: (7) Failed to connect to host.docker.internal port 11434 after 0 ms: Couldn't connect to server\n",
])
def test_a_host_docker_internal_that_resolved_stays_the_connection(tmp_path: Path, text: str) -> None:
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == "access.connect_failed", [f.code for f in found]
