"""Client and gateway failures worded as their own sources word them (the catalogue entries of
clients_node/clients_other/client_tools/litellm/proxies.jsonl name each source@ref), judged end to end:
the code at rank 1, the quoted line, and the first fix's exact command."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.findings import Finding
from tests import analysis


def findings_of(tmp_path: Path, text: str) -> list[Finding]:
    return analysis.findings_of(analysis.written(tmp_path, text))


# (case, log text, rank-1 code, a substring of its evidence, its first fix's exact command or None)
CASES = [
    # LiteLLM's exception classes (litellm/exceptions.py): a 5xx the upstream answered
    ("litellm-500", "litellm.InternalServerError: InternalServerError: Hosted_vllmException - Internal Server Error\n",
     "access.server_error", "litellm.InternalServerError", None),
    ("litellm-503", "litellm.ServiceUnavailableError: ServiceUnavailableError: OpenAIException - Service Unavailable\n",
     "access.server_error", "ServiceUnavailableError", None),
    ("litellm-403", "litellm.PermissionDeniedError: PermissionDeniedError: OpenAIException - You are not allowed to access this model\n",
     "access.key_rejected", "PermissionDeniedError", None),
    # aider's words after LiteLLM's exception (aider/exceptions.py)
    ("aider-timeout", "The API provider timed out without returning a response. They may be down or overloaded.\n",
     "access.timeout", "timed out without returning a response", None),
    # go-openai's APIError, both wordings (v1.30: no status text; v1.31: with it)
    ("go-openai-503-v1.30", "error, status code: 503, message: Service Unavailable\n", "access.server_error", "status code: 503", None),
    ("go-openai-502-v1.31", "error, status code: 502, status: 502 Bad Gateway, message: upstream unavailable\n",
     "access.server_error", "status code: 502", None),
    # the Vercel AI SDK: a network failure, a missing key, an answer not in the provider's shape, a status text
    ("vercel-connect", "AI_APICallError: Cannot connect to API: other side closed\n", "access.connect_failed", "Cannot connect to API", None),
    ("vercel-key", "AI_LoadAPIKeyError: OpenAI API key is missing. Pass it using the 'apiKey' parameter or the "
     "OPENAI_API_KEY environment variable.\n", "access.key_missing", "API key is missing", "read -rs OPENAI_API_KEY && export OPENAI_API_KEY"),
    ("vercel-shape", "AI_TypeValidationError: Type validation failed: Value: {\"model\":\"llama3\",\"done\":true}.\n",
     "access.response_invalid", "Type validation failed", None),
    ("vercel-status-text", "APICallError [AI_APICallError]: Bad Gateway\n", "access.server_error", "AI_APICallError", None),
    # openai-node's error for an empty error body, as Cline and Roo Code show it
    ("openai-node-no-body", "Error: 502 status code (no body)\n", "access.server_error", "502 status code (no body)", None),
    # undici: a key with a character no header carries; a proxy that refused the CONNECT
    ("undici-bytestring", "TypeError: Cannot convert argument to a ByteString because the character at index 7 has a value of 8217 "
     "which is greater than 255.\n", "access.key_malformed", "ByteString", None),
    ("undici-proxy-407", "TypeError: fetch failed\n  [cause]: RequestAbortedError [AbortError]: Proxy response (407) !== 200 when HTTP Tunneling\n",
     "access.proxy_failed", "!== 200 when HTTP Tunneling", None),
    # Open WebUI's connection check and LlamaIndex's missing key (its next line names the variable)
    ("open-webui-network", "OpenAI: Network Problem\n", "access.connect_failed", "OpenAI: Network Problem", None),
    ("llamaindex-key", "ValueError: No API key found for OpenAI.\nPlease set either the OPENAI_API_KEY environment variable or "
     "openai.api_key prior to initialization.\n", "access.key_missing", "No API key found for OpenAI", "read -rs OPENAI_API_KEY && export OPENAI_API_KEY"),
    # Spring: the retry handler's status and RestTemplate's read timeout
    ("spring-ai-401", "org.springframework.ai.retry.NonTransientAiException: 401 - {\"error\":{\"message\":\"Incorrect API key provided: sk-x\"}}\n",
     "access.key_rejected", "NonTransientAiException: 401", None),
    ("spring-read-timeout", "org.springframework.web.client.ResourceAccessException: I/O error on POST request for "
     "\"http://localhost:11434/api/chat\": Read timed out\n", "access.timeout", "Read timed out", None),
    # a base URL without its scheme, as each HTTP client refuses it: the fix writes it in full
    ("httpx-no-scheme", "openai.APIConnectionError: Connection error.\n"
     "httpx.UnsupportedProtocol: Request URL is missing an 'http://' or 'https://' protocol.\n",
     "access.base_url_invalid", "missing an 'http://' or 'https://' protocol", None),
    ("requests-no-scheme", "requests.exceptions.MissingSchema: Invalid URL 'localhost:8000/v1/chat/completions': No scheme supplied. "
     "Perhaps you meant https://localhost:8000/v1/chat/completions?\n", "access.base_url_invalid", "No scheme supplied",
     "OPENAI_BASE_URL=http://localhost:8000/v1"),
    ("undici-no-scheme", "TypeError: Failed to parse URL from localhost:11434/api/chat\n", "access.base_url_invalid",
     "Failed to parse URL", "OPENAI_BASE_URL=http://localhost:11434"),
    ("go-no-scheme", 'Post "localhost:8000/v1/chat/completions": unsupported protocol scheme "localhost"\n',
     "access.base_url_invalid", "unsupported protocol scheme", "OPENAI_BASE_URL=http://localhost:8000/v1"),
    # no key sent at all: the server's own words, and a Stainless SDK's for another provider's variable
    ("openai-no-key-sent", "openai.AuthenticationError: Error code: 401 - {'error': {'message': \"You didn't provide an API key. "
     "You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).\", "
     "'type': 'invalid_request_error', 'param': None, 'code': None}}\n", "access.key_missing", "You didn't provide an API key", None),
    ("stainless-groq-key", "groq.GroqError: The api_key client option must be set either by passing api_key to the client or by "
     "setting the GROQ_API_KEY environment variable\n", "access.key_missing", "GROQ_API_KEY", "read -rs GROQ_API_KEY && export GROQ_API_KEY"),
    # a 5xx as each HTTP library's raise_for_status / error class words it
    ("openai-status-503", "openai.APIStatusError: Error code: 503\n", "access.server_error", "Error code: 503", None),
    ("httpx-raise-503", "httpx.HTTPStatusError: Server error '503 Service Unavailable' for url "
     "'http://localhost:8000/v1/chat/completions'\n", "access.server_error", "Server error '503", None),
    ("requests-raise-500", "requests.exceptions.HTTPError: 500 Server Error: Internal Server Error for url: "
     "http://localhost:8000/v1/chat/completions\n", "access.server_error", "500 Server Error", None),
    # the client's own deadline: node's AbortSignal.timeout, Go's ResponseHeaderTimeout
    ("node-abort-timeout", "DOMException [TimeoutError]: The operation was aborted due to timeout\n", "access.timeout",
     "aborted due to timeout", None),
    ("go-header-timeout", 'Post "http://localhost:8000/v1/chat/completions": net/http: timeout awaiting response headers\n',
     "access.timeout", "timeout awaiting response headers", None),
    # client tools in their own words: LM Studio's SDK, Cline's empty key field, Continue's stream reader, node-fetch
    ("lmstudio-sdk", "Error: Failed to connect to LM Studio.\n", "access.connect_failed", "Failed to connect to LM Studio", None),
    ("cline-key", "Error: Groq API key is required\n", "access.key_missing", "API key is required", None),
    ("continue-malformed", "Error: Malformed JSON sent from server: event: ping\n", "access.response_invalid", "Malformed JSON", None),
    ("node-fetch-premature", "FetchError: Invalid response body while trying to fetch http://localhost:11434/api/chat: Premature close\n",
     "access.streaming_broken", "Premature close", None),
    # n8n's NodeApiError: its words for node's error codes and for the answer's status
    ("n8n-refused", "NodeApiError: The service refused the connection - perhaps it is offline\n", "access.connect_failed",
     "refused the connection", None),
    ("n8n-502", "NodeApiError: Bad gateway - the service failed to handle your request\n", "access.server_error", "Bad gateway", None),
    ("n8n-401", "NodeApiError: Authorization failed - please check your credentials\n", "access.key_rejected", "Authorization failed", None),
    # a base URL the client cannot parse (a doubled port, no host); Claude Code with no credential at all
    ("httpx-bad-port", "httpx.InvalidURL: Invalid port: '8000:8000'\n", "access.base_url_invalid", "Invalid port", None),
    ("requests-no-host", "requests.exceptions.InvalidURL: Invalid URL 'http:///v1/chat/completions': No host supplied\n",
     "access.base_url_invalid", "No host supplied", None),
    ("claude-code-not-logged-in", "Not logged in · Please run /login\n", "access.key_missing", "Not logged in", None),
    # claude -p without a key (the wording its CHANGELOG quotes): the variable it names is the one to set
    ("claude-code-key-required", "Error: ANTHROPIC_API_KEY required\n", "access.key_missing", "ANTHROPIC_API_KEY required",
     "read -rs ANTHROPIC_API_KEY && export ANTHROPIC_API_KEY"),
    # a 5xx quoted as its status line by a client (openai-node's message, a requests Response repr)
    ("status-line-503", "Error: 503 Service Unavailable\n", "access.server_error", "503 Service Unavailable", None),
    # reqwest (async-openai): the wrapper names no cause, the source error after it does
    ("reqwest-timeout", "error sending request for url (http://localhost:11434/api/chat): operation timed out\n",
     "access.timeout", "operation timed out", None),
    # .NET HttpClient's refused CONNECT (dotnet/runtime Strings.resx): the proxy is bypassed for a local server
    ("dotnet-proxy-tunnel", "OPENAI_BASE_URL=http://localhost:8000/v1\nSystem.Net.Http.HttpRequestException: The proxy tunnel "
     "request to proxy 'http://proxy:3128/' failed with status code '403'.\n", "access.proxy_failed", "proxy tunnel request",
     "export NO_PROXY=localhost,127.0.0.1"),
    # undici's dns interceptor; a chunked stream cut (urllib3 2.x, requests, undici HTTP/2, openai-node's stream helper)
    ("undici-no-dns", "InformationalError: No DNS entries found\n", "access.dns_failed", "No DNS entries found", None),
    ("urllib3-ended-prematurely", "urllib3.exceptions.ProtocolError: Response ended prematurely\n", "access.streaming_broken",
     "Response ended prematurely", None),
    ("requests-chunked-cut", "requests.exceptions.ChunkedEncodingError: ('Connection broken: IncompleteRead(0 bytes read)', "
     "IncompleteRead(0 bytes read))\n", "access.streaming_broken", "ChunkedEncodingError", None),
    ("undici-h2-cut", "InformationalError: HTTP/2: stream closed before the response was complete\n", "access.streaming_broken",
     "stream closed before the response was complete", None),
    ("openai-node-empty-stream", "OpenAIError: stream ended without producing a ChatCompletionMessage with role=assistant\n",
     "access.streaming_broken", "stream ended without producing", None),
    # a stream: true answer that is no event stream (openai-node core/streaming.ts, the browser's EventSource)
    ("openai-node-malformed-sse", "SyntaxError: Error reading response: malformed server-sent event JSON.\n", "access.streaming_broken",
     "malformed server-sent event JSON", None),
    ("eventsource-mime", 'EventSource\'s response has a MIME type ("text/html") that is not "text/event-stream". Aborting the '
     'connection.\n', "access.streaming_broken", "not \"text/event-stream\"", None),
    # node's URL parser on a base URL without its scheme
    ("node-invalid-url", "TypeError [ERR_INVALID_URL]: Invalid URL\n", "access.base_url_invalid", "ERR_INVALID_URL", None),
    # client tools' own words: AnythingLLM (no base path, no model), LobeChat (Ollama unreachable), LangChain JS (no key)
    ("anythingllm-no-base-path", "Error: No Ollama Base Path was set.\n", "access.base_url_invalid", "Base Path was set", None),
    ("anythingllm-no-model", "Error: GenericOpenAI must have a valid model set.\n", "access.model_id_missing", "valid model set", None),
    ("lobechat-ollama-unavailable", '{"error":{"message":"please check whether your ollama service is available"},'
     '"errorType":"OllamaServiceUnavailable","provider":"ollama"}\n', "access.connect_failed", "ollama service is available", None),
    ("langchainjs-anthropic-no-key", "Error: Anthropic API key not found\n", "access.key_missing", "Anthropic API key not found", None),
    ("openai-agents-no-key", "agents.exceptions.UserError: API key is required but was not provided.\n", "access.key_missing",
     "API key is required", "read -rs OPENAI_API_KEY && export OPENAI_API_KEY"),
    # the Anthropic TS SDK (Claude Code bundles it): "Could not resolve" names no host, the key is what is missing
    ("anthropic-ts-no-key", 'Error: Could not resolve authentication method. Expected either apiKey or authToken to be set. Or for '
     'one of the "X-Api-Key" or "Authorization" headers to be explicitly omitted\n', "access.key_missing", "apiKey or authToken",
     "read -rs ANTHROPIC_API_KEY && export ANTHROPIC_API_KEY"),
    # Go's resolver: the DNS server answered SERVFAIL
    ("go-dns-server-misbehaving", 'Get "http://vllm:8000/v1/models": dial tcp: lookup vllm on 127.0.0.53:53: server misbehaving\n',
     "access.dns_failed", "server misbehaving", None),
    # SGLang's warm-up request to itself answered by an HTML page: a proxy from the environment
    ("sglang-warmup-proxy-page", "AssertionError: res=<Response [403]>, res.text='<html>\\n<head><title>403 Forbidden</title>"
     "</head>'\n", "access.proxy_failed", "res=<Response [403]>", None),
    # Claude Code's API_ERROR_MESSAGE_PREFIX before the SDK's `${status} ${message}` (anthropics/claude-code#87317)
    ("claude-code-529", "API Error: 529 Overloaded. This is a server-side issue, usually temporary \u2014 try again in a moment. If it "
     "persists, check https://status.claude.com/.\n", "access.server_error", "API Error: 529 Overloaded", None),
    # the Anthropic API's overloaded_error object, pasted pretty-printed (anthropics/claude-code#23049)
    ("anthropic-overloaded-body", '{\n  "type": "error",\n  "error": {\n    "type": "overloaded_error",\n    "message": "Overloaded"\n'
     '  },\n  "request_id": "req_011CXnukXFhq5zC25S7ev2cy"\n}\n', "access.server_error", '"type": "overloaded_error"', None),
    # axios settle.js through the CodeGPT extension (diffbot/code-gpt-docs#33): 407 is a proxy wanting credentials
    ("axios-407", "OpenAI API Response was: Error: Request failed with status code 407.\n", "access.proxy_failed",
     "status code 407", None),
    # httpx raise_for_status on Ollama's 404 for a model it has not pulled (run-llama/llama_index#12985)
    ("httpx-ollama-404-model", "httpx.HTTPStatusError: Client error '404 Not Found' for url 'http://localhost:11434/api/chat'\n",
     "access.model_not_found", "Client error '404 Not Found'", None),
    # the OpenAI API masks the key it got but keeps its first characters: a quote there was sent (OpenBMB/ChatDev#128)
    ("openai-key-with-quotes", 'Incorrect API key provided: "sk-RoCv*****************************************ABM". You can find '
     "your API key at https://platform.openai.com/account/api-keys.\n", "access.key_malformed", "provided: \"sk-RoCv", None),
    # Windows cmd keeps the quotes of `set VAR="..."` in the value (Aider-AI/aider#1731)
    ("cmd-set-quoted-key", '(aider) D:\\SD> set  OPENAI_API_KEY="sk-projXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX...."\n',
     "access.key_malformed", "set  OPENAI_API_KEY=", None),
    # a key read from .env with its quotes: the header carries them (sonichi/sutando#691)
    ("bearer-quoted", "The Authorization header ends up as `Bearer \\\"abc123\\\"` and the request 401s with no useful error\n",
     "access.key_malformed", "Bearer", None),
    # the OpenAI API's message with another provider's key in it (an Anthropic key sent to OpenAI): codes.md's
    # access.key_rejected is a key "for another provider" the server answered 401 to
    ("openai-anthropic-key", "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: "
     "sk-ant-a***************************xyz. You can find your API key at https://platform.openai.com/account/api-keys.'}}\n",
     "access.key_rejected", "sk-ant-a", None),
    # HTTP clients refusing to send a key with a newline or leading space in its header
    ("h11-illegal-header", "httpx.LocalProtocolError: Illegal header value b'Bearer sk-abc123\\n'\n", "access.key_malformed",
     "Illegal header value", None),
    ("requests-invalid-header", "requests.exceptions.InvalidHeader: Invalid leading whitespace, reserved character(s), or return "
     "character(s) in header value: ' sk-abc123'\n", "access.key_malformed", "Invalid leading whitespace", None),
    ("node-invalid-char", 'TypeError [ERR_INVALID_CHAR]: Invalid character in header content ["Authorization"]\n',
     "access.key_malformed", "Invalid character in header content", None),
    ("go-invalid-header", 'Post "http://localhost:8000/v1/chat/completions": net/http: invalid header field value for "Authorization"\n',
     "access.key_malformed", "invalid header field value", None),
    # Claude Code's words for a streamed answer cut before its end (its CHANGELOG quotes them)
    ("claude-code-mid-response", "API Error: Connection closed mid-response. The response above may be incomplete.\n",
     "access.streaming_broken", "Connection closed mid-response", None),
    # node's stream.finished on a body destroyed before its end (lib/internal/errors.js)
    # .NET's HttpClient (dotnet/runtime System.Net.Http Strings.resx): its own deadline, a status, a SOCKS proxy's refusal
    ("dotnet-timeout", "System.Threading.Tasks.TaskCanceledException: The request was canceled due to the configured "
     "HttpClient.Timeout of 100 seconds elapsing.\n", "access.timeout", "HttpClient.Timeout of 100 seconds", None),
    ("dotnet-503", "System.Net.Http.HttpRequestException: Response status code does not indicate success: 503 (Service Unavailable).\n",
     "access.server_error", "does not indicate success: 503", None),
    ("dotnet-socks", "System.Net.Http.HttpRequestException: SOCKS server failed to connect to the destination.\n",
     "access.proxy_failed", "SOCKS server failed", None),
    # java.net.http's chunked body parser and OkHttp's sources: the body ended before its last chunk
    ("jdk-chunked-cut", "java.io.IOException: chunked transfer encoding, state: READING_LENGTH\n", "access.streaming_broken",
     "chunked transfer encoding", None),
    ("okhttp-body-cut", "java.net.ProtocolException: unexpected end of stream\n", "access.streaming_broken", "unexpected end of stream", None),
    # curl's socks.c: the SOCKS proxy refused the CONNECT
    ("curl-socks5", "curl: (97) Can't complete SOCKS5 connection to localhost. (4)\n", "access.proxy_failed", "SOCKS5 connection", None),
    # Envoy's 504 body for its route timeout (source/common/router/router.cc)
    ("envoy-route-timeout", "upstream request timeout\n", "access.timeout", "upstream request timeout", None),
    # a stream cut as other clients word it: node's String(err), the browser, hyper (reqwest), Go's HTTP/2 transport
    ("node-premature-close-message", "[ERROR] Failed to process stream: Error: Premature close\n", "access.streaming_broken",
     "Premature close", None),
    ("chromium-incomplete-chunked", "net::ERR_INCOMPLETE_CHUNKED_ENCODING 200 (OK)\n", "access.streaming_broken",
     "ERR_INCOMPLETE_CHUNKED_ENCODING", None),
    ("hyper-incomplete-body", "error decoding response body: error reading a body from connection: end of file before message "
     "length reached\n", "access.streaming_broken", "end of file before message length reached", None),
    ("go-h2-stream-reset", "stream error: stream ID 3; INTERNAL_ERROR; received from peer\n", "access.streaming_broken",
     "received from peer", None),
    ("node-premature-close", "Error [ERR_STREAM_PREMATURE_CLOSE]: Premature close\n    at new NodeError (node:internal/errors:405:5)\n",
     "access.streaming_broken", "ERR_STREAM_PREMATURE_CLOSE", None),
]


@pytest.mark.parametrize(("name", "text", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path: Path, name: str, text: str, code: str, evidence: str, command: str | None) -> None:
    found = findings_of(tmp_path, text)
    assert found and found[0].code == code, [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence
    assert found[0].fixes[0].command == command


def test_a_litellm_wrapper_does_not_hide_the_client_side_cause(tmp_path: Path) -> None:
    # LiteLLM's Anthropic path wraps a failed TLS handshake in InternalServerError; aider adds its words for a 5xx
    text = ("litellm.InternalServerError: AnthropicException - [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
            "self-signed certificate in certificate chain (_ssl.c:1000). Handle with `litellm.InternalServerError`.\n"
            "The API provider's servers are down or overloaded.\n")
    assert findings_of(tmp_path, text)[0].code == "access.tls_failed"


def test_a_gateway_error_page_is_the_5xx_not_a_bad_body(tmp_path: Path) -> None:
    # nginx's 502 page (ngx_http_special_response.c) as a client prints the body it could not parse
    text = ("<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n"
            "<hr><center>nginx/1.18.0 (Ubuntu)</center>\n</body>\n</html>\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "access.server_error"
    assert "access.response_invalid" in found[0].explains


def test_a_squid_page_is_the_proxy_answering(tmp_path: Path) -> None:
    # squid's ERR_ACCESS_DENIED template, behind a client's failed JSON parse
    text = ("requests.exceptions.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"
            "<title>ERROR: The requested URL could not be retrieved</title>\n"
            "<p>Access control configuration prevents your request from being allowed at this time.  "
            "Please contact your service provider if you feel this is incorrect.</p>\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "access.proxy_failed"
    assert found[0].fixes[0].summary.startswith("Bypass the proxy")


def test_the_proxy_bypass_names_the_internal_server_a_proxy_page_quotes(tmp_path: Path) -> None:
    # squid's ERR_CONNECT_FAIL names the URL it could not retrieve: a private address, so bypass the proxy for it
    text = ('<p>The following error was encountered while trying to retrieve the URL: <a href="http://10.1.2.3:8000/v1/models">'
            "http://10.1.2.3:8000/v1/models</a></p>\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "access.proxy_failed"
    assert found[0].fixes[0].command == "export NO_PROXY=10.1.2.3,localhost,127.0.0.1"


def test_a_proxy_wanting_credentials_for_a_public_api_is_not_bypassed(tmp_path: Path) -> None:
    # Go's transport returns the 407's status text; api.openai.com is only reachable through that proxy
    found = findings_of(tmp_path, 'Post "https://api.openai.com/v1/chat/completions": Proxy Authentication Required\n')
    assert found[0].code == "access.proxy_failed"
    assert found[0].fixes[0].command is None


VLLM_LOADING = ("INFO 05-01 10:00:00 [api_server.py:1043] vLLM API server version 0.8.5\n"
                "INFO 05-01 10:00:01 [config.py:717] non-default args: {'model': 'meta-llama/Llama-3.1-70B-Instruct'}\n"
                "INFO 05-01 10:02:30 [default_loader.py:272] Loading weights took 148.52 seconds\n")


def test_a_client_timeout_while_the_server_is_still_loading_is_the_start_up(tmp_path: Path) -> None:
    # openai-python's APITimeoutError against a vLLM whose log, in the same paste, never reached ready
    found = findings_of(tmp_path, VLLM_LOADING + "openai.APITimeoutError: Request timed out.\n")
    assert found[0].code == "load.startup_timeout"
    assert "access.timeout" in found[0].explains
    assert any("never ready" in line for line in found[0].evidence)


def test_a_client_timeout_against_a_ready_server_stays_the_clients(tmp_path: Path) -> None:
    ready = VLLM_LOADING + "INFO:     Application startup complete.\n"
    assert findings_of(tmp_path, ready + "openai.APITimeoutError: Request timed out.\n")[0].code == "access.timeout"


def test_a_vercel_ai_error_no_rule_knows_is_the_clients_unrecognised_failure(tmp_path: Path) -> None:
    # the SDK's error names mark the output as a client's: its failure is the access layer's, quoted
    text = ("AI_APICallError: Something unexpected happened in the provider\n"
            "    at postToApi (file:///app/node_modules/@ai-sdk/provider-utils/dist/index.mjs:523:11)\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "access.unrecognized_failure"
    assert "Something unexpected happened" in found[0].title


def test_claude_code_with_v1_in_its_base_url_asks_for_v1_v1_messages(tmp_path: Path) -> None:
    # Claude Code appends /v1/messages to ANTHROPIC_BASE_URL; Go's router (Ollama) answers the doubled path with 404
    text = ("export ANTHROPIC_BASE_URL=http://localhost:11434/v1\n"
            "claude --model qwen2.5-coder\n"
            "  ⎿  API Error: 404 404 page not found\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "access.base_url_invalid"
    assert found[0].fixes[0].command == "ANTHROPIC_BASE_URL=http://localhost:11434"


def test_an_anthropic_client_at_a_server_without_the_messages_api_is_a_protocol_mismatch(tmp_path: Path) -> None:
    # FastAPI's 404 for a route the server does not have, to a base URL without /v1
    text = ("export ANTHROPIC_BASE_URL=http://localhost:8000\n"
            "  ⎿  API Error: 404 {\"detail\":\"Not Found\"}\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "access.protocol_mismatch"
    assert "/v1/messages" in found[0].title


def test_a_timeout_fix_names_the_clients_own_setting(tmp_path: Path) -> None:
    found = findings_of(tmp_path, "litellm.Timeout: Connection timed out after 600.0 seconds.\n")
    assert found[0].code == "access.timeout"
    assert "stream_timeout in the proxy's litellm_params" in found[0].fixes[0].summary


def test_a_404_without_a_path_or_a_model_is_the_paths(tmp_path: Path) -> None:
    # openai-node src/core/error.ts APIError.makeMessage: `${status} status code (no body)`, as Cline showed it
    # (cline/cline#375, whose base URL ended in /chat/completions): no body names a model, so the 404 is the path's
    # (a server that has the route and not the model says which model)
    line = 'OpenAI Compatible API returning "404 status code (no body)" -'
    found = findings_of(tmp_path, line + "\n")
    assert [f.code for f in found] == ["access.base_url_invalid"]
    assert found[0].evidence[:2] == [f"{tmp_path / 'client.log'}:1: {line}", "recognised by: template"]


@pytest.mark.parametrize(("text", "code", "family"), [
    # AnythingLLM's providers (server/utils/AiProviders/*/index.js), as the source formats them: no template, the family
    ("Error: No Groq API key was set.\n", "access.key_missing", "missing key"),
    ("Error: No Z.AI API key was set.\n", "access.key_missing", "missing key"),
])
def test_a_client_failure_in_words_no_template_has_is_named_by_its_family(tmp_path: Path, text: str, code: str, family: str) -> None:
    found = findings_of(tmp_path, text)
    assert found[0].code == code, [f.code for f in found]
    assert f"recognised by: family: {family}" in found[0].evidence


def test_an_exception_quoted_inside_a_json_field_is_a_failure_not_an_all_clear(tmp_path: Path) -> None:
    # the LiteLLM proxy's error answer: its 400 (litellm/exceptions.py BadRequestError) quoted as the "message" field
    text = ('{\n    "code": "400",\n    "message": "litellm.BadRequestError: AnthropicException - b\'{\\"type\\":\\"error\\",'
            '\\"error\\":{\\"type\\":\\"invalid_request_error\\",\\"message\\":\\"prompt is too long\\"}}\'",\n}\n')
    found = findings_of(tmp_path, text)
    assert found[0].code == "access.unrecognized_failure", [f.code for f in found]
    assert "litellm.BadRequestError" in found[0].title


def test_a_fetch_body_cut_mid_answer_is_the_stream_not_a_refused_connection(tmp_path: Path) -> None:
    # undici's fetch (lib/web/fetch/index.js): the body errors with TypeError('terminated'), its cause the socket's
    # hang-up (lib/dispatcher/client-h1.js "other side closed"): the answer had begun, so the stream was cut
    text = ("TypeError: terminated\n    at Fetch.onAborted (node:internal/deps/undici/undici:11000:53)\n"
            "  [cause]: SocketError: other side closed\n      at TLSSocket.onSocketEnd (node:internal/deps/undici/undici:6261:26) {\n"
            "    code: 'UND_ERR_SOCKET',\n")
    found = findings_of(tmp_path, text)
    assert [f.code for f in found][:1] == ["access.streaming_broken"]
    assert "access.connect_failed" in found[0].explains


# Ollama's request log (gin's default format) for Claude Code's POST /v1/messages, and the 404 body (ollama/ollama#13949)
GIN_MESSAGES_404 = ('[GIN] 2026/01/28 - 23:40:13 | 404 |       3.232\u00b5s | 172.17.0.1 | POST     "/v1/messages?beta=true"\n'
                    '[GIN] 2026/01/28 - 23:40:13 | 404 |       3.968\u00b5s | 172.17.0.1 | POST     "/v1/messages?beta=true"\n'
                    "404 page not found\n")


def test_an_ollama_without_the_messages_api_is_a_protocol_mismatch_fixed_by_updating(tmp_path: Path) -> None:
    found = findings_of(tmp_path, GIN_MESSAGES_404)
    assert [f.code for f in found] == ["access.protocol_mismatch"]  # the bare 404 body is the same answer, not a base URL
    assert "v0.14.0" in found[0].title
    assert found[0].fixes[0].command == "curl -fsSL https://ollama.com/install.sh | sh"


def test_a_404_body_alone_still_reads_as_a_base_url_without_the_api_root(tmp_path: Path) -> None:
    found = findings_of(tmp_path, "404 page not found\n")
    assert found[0].code == "access.base_url_invalid"


def test_ollamas_own_5xx_answer_to_a_runner_crash_is_not_the_root(tmp_path: Path) -> None:
    # intel/ipex-llm#12118: the runner dies; the request log's 500 is its answer to that request
    text = ('time=2024-09-25T08:35:45.801+08:00 level=ERROR source=sched.go:456 msg="error loading llama server" '
            'error="llama runner process has terminated: exit status 0xc0000135"\n'
            '[GIN] 2024/09/25 - 08:35:45 | 500 |    6.7307138s |       127.0.0.1 | POST     "/api/embed"\n')
    found = findings_of(tmp_path, text)
    assert "access.server_error" not in [f.code for f in found]
    assert found[0].code.startswith("load.")


def test_a_gin_5xx_alone_is_the_servers_error(tmp_path: Path) -> None:
    found = findings_of(tmp_path, '[GIN] 2024/09/25 - 08:35:45 | 500 |    6.7307138s |       127.0.0.1 | POST     "/api/chat"\n')
    assert found[0].code == "access.server_error"


def test_a_407_asks_for_the_proxys_credentials(tmp_path: Path) -> None:
    found = findings_of(tmp_path, "AxiosError: Request failed with status code 407\n")
    assert found[0].code == "access.proxy_failed"
    assert "407 Proxy Authentication Required" in found[0].title
    assert found[0].fixes[0].summary.startswith("Give the client the proxy's user name and password")


@pytest.mark.parametrize("line", [
    'headers = {"Authorization": "Bearer " + api_key}',  # the scheme written before the key, in code
    'curl -H "Authorization: Bearer $OPENAI_API_KEY" http://localhost:8000/v1/models',
    "export OPENAI_API_KEY=\"sk-abc123\"",  # a POSIX shell takes the quotes off
])
def test_a_well_formed_header_or_assignment_is_no_malformed_key(tmp_path: Path, line: str) -> None:
    assert "access.key_malformed" not in [f.code for f in findings_of(tmp_path, line + "\n")]


def test_a_dotnet_404_that_names_no_model_is_the_paths(tmp_path: Path) -> None:
    # EnsureSuccessStatusCode's 404 names neither a path nor a model: as System.ClientModel's bare "Status: 404 (Not Found)",
    # the route is what the server lacks
    found = findings_of(tmp_path, "System.Net.Http.HttpRequestException: Response status code does not indicate success: 404 (Not Found).\n")
    assert [f.code for f in found] == ["access.base_url_invalid"]


def test_a_gateway_route_timeout_names_the_gateways_setting(tmp_path: Path) -> None:
    found = findings_of(tmp_path, "upstream request timeout\n")
    assert "the Envoy route's timeout (15 s by default" in found[0].fixes[0].summary
