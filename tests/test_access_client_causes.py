"""A client's or gateway's error that names its cause is diagnosed as that cause, whatever class wraps it and
whatever else the paste lacks (checks/access/client_log.py, doctor/logparse/events.py): a gateway's 504/524 is a
timeout, a request that carried no key is key_missing (not rejected, not malformed), a 404 that names no model is the
base URL's path, an OpenAI Chat request at the Anthropic Messages API is a protocol mismatch. Each line is quoted from
the thread or source named above it."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.logparse import failure_prose
from tests.analysis import findings_of, written

# (the code at rank 1, the pasted output)
CASES = [
    # https://github.com/ollama/ollama/issues/3694: aiohttp through Cloudflare, whose 524 is its origin timeout
    ("access.timeout", "Ollama call failed with status code 524. Details: <bound method ClientResponse.text of "
                       "<ClientResponse(http://chat.tamdu.com/api/generate) [524 None]>\n"),
    # openai-python _base_client.py: a 5xx is InternalServerError, whatever the status; a gateway's 504 is still a timeout
    ("access.timeout", "openai.InternalServerError: Error code: 504 - {'error': {'message': 'Gateway Timeout', 'type': 'server_error'}}\n"),
    # https://github.com/opea-project/Enterprise-Inference/pull/95: ingress-nginx's 504 page (nginx ngx_http_special_response.c)
    ("access.timeout", "<html>\n<head><title>504 Gateway Time-out</title></head>\n<body>\n<center><h1>504 Gateway Time-out</h1></center>\n"
                       "<hr><center>nginx</center>\n</body>\n</html>\n"),
    # openai-node / anthropic-sdk-typescript APIError.makeMessage: `${status} status code (no body)`
    ("access.timeout", "Error: 504 status code (no body)\n"),
    ("access.server_error", "Error: 502 status code (no body)\n"),
    # https://github.com/voocel/ainovel-cli/issues/79: the client's stream idle deadline
    ("access.timeout", "[litellm: openrouter: timeout] stream idle timeout: no chunks received for 5mos\n"),
    # https://github.com/langchain-ai/langchain/issues/21261: an unset CI secret makes h11 refuse an empty `Bearer ` header
    ("access.key_missing", "LocalProtocolError: Illegal header value b'Bearer '\n"),
    # go-openai client_test.go: the OpenAI API's 401 to a request without a key, as openai-python raises it
    ("access.key_missing", "openai.AuthenticationError: Error code: 401 - {'error': {'message': \"You didn't provide an API key. You need "
                           "to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).\", "
                           "'type': 'invalid_request_error', 'param': None, 'code': None}}\n"),
    # OpenRouter's 401 bodies to a request without a key
    ("access.key_missing", '{"error":{"message":"No auth credentials found","code":401}}\n'),
    ("access.key_missing", "Error: 401 Missing Authentication header\n"),
    # a well-formed key the API refused stays key_rejected (openai-python AuthenticationError, invalid_api_key)
    ("access.key_rejected", "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-proj-"
                            "********************abcd. You can find your API key at https://platform.openai.com/account/api-keys.', "
                            "'type': 'invalid_request_error', 'param': None, 'code': 'invalid_api_key'}}\n"),
    # https://github.com/OpenRouterTeam/openrouter-examples/issues/74 and https://github.com/maxnowack/anthropic-proxy/issues/4
    ("access.model_not_found", '{"error": {"message": "claude-sonnet-4-6 is not a valid model ID", "code": 400}}\n'),
    ("access.model_not_found", 'API Error: 400 {"error":"{\\"error\\":{\\"message\\":\\"google/gemini-2.0-pro-exp-02-05:free is not a '
                               'valid model ID\\",\\"code\\":400}}"}\n'),
    # https://github.com/anomalyco/opencode/issues/12219: OpenRouter's 402 body
    ("access.quota_exceeded", "This request requires more credits, or fewer max_tokens. You requested up to 32000 tokens, but can only "
                              "afford 0. To increase, visit https://openrouter.ai/settings/keys and create a key with a higher monthly limit\n"),
    # https://github.com/continuedev/continue/issues/5421: a proxy's 500 relaying the Anthropic API's spend-limit refusal
    ("access.quota_exceeded", "Error: HTTP 500 Internal Server Error from https://api.continue.dev/model-proxy/v1/chat/completions\n\n"
                              'Error in Continue server: {"type":"error","error":{"type":"invalid_request_error","message":"You have '
                              'reached your specified API usage limits. You will regain access on 2025-05-01 at 00:00 UTC."}}\n'),
    # https://github.com/64bit/async-openai/issues/221: a llamafile answering a route it lacks with plain text
    ("access.response_invalid", "2024-05-07T14:49:32.808024Z ERROR async_openai::error: failed deserialization of: File Not Found\n"
                                'Error: JSONDeserialize(Error("expected value", line: 1, column: 1))\n'),
    # FastAPI's 404 for a route it does not have, in the Python repr openai.NotFoundError prints it with: the path, not a model
    ("access.base_url_invalid", "openai.NotFoundError: Error code: 404 - {'detail': 'Not Found'}\n"),
    # https://github.com/microsoft/semantic-kernel/issues/8980: System.ClientModel's bare status, no model named
    ("access.base_url_invalid", "Unhandled exception. Microsoft.SemanticKernel.HttpOperationException: Service request failed.\n"
                                "Status: 404 (Not Found)\n"),
    # https://github.com/chatpire/chatgpt-web-share/issues/164: a JSON "Route not found"
    ("access.base_url_invalid", 'OpenAI: {"message":"Route not found"} (code: 404)\n'),
    # a browser console's failed fetch, the client appending /v1 to a base URL that had it
    ("access.base_url_invalid", "POST http://localhost:8000/v1/v1/chat/completions 404 (Not Found)\n"),
    # https://github.com/NyarchLinux/NyarchAssistant/issues/157: OpenAI tool results sent to the Anthropic Messages API
    ("access.protocol_mismatch", "Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'messages: "
                                 "Unexpected role \"tool\". Allowed roles are \"user\" or \"assistant\".'}}\n"),
    # anthropic-sdk-typescript src/lib/MessageStream.ts: a Messages API stream that ended before its message
    ("access.streaming_broken", "AnthropicError: stream ended without producing a Message with role=assistant\n"),
    ("access.streaming_broken", "Error: request ended without sending any chunks\n"),
    # a base URL without its scheme: axios lib/adapters/http.js, node's ERR_INVALID_URL as String(err) prints it
    ("access.base_url_invalid", "AxiosError: Unsupported protocol localhost:\n"),
    ("access.base_url_invalid", "TypeError: Invalid URL\n"),
    # openai.NotFoundError naming no model: the path's 404
    ("access.base_url_invalid", "openai.NotFoundError: Error code: 404 - {'error': {'message': 'Not Found', 'type': 'invalid_request_error'}}\n"),
    # naming one: the model's (vLLM's NotFoundError body, relayed by LiteLLM)
    ("access.model_not_found", "litellm.NotFoundError: OpenAIException - Error code: 404 - {'object': 'error', 'message': 'The model "
                               "`gpt-4` does not exist.', 'type': 'NotFoundError', 'param': None, 'code': 404}\n"),
    # the runtimes' URL parsers: CPython urllib.request, java.net.URI, .NET System.Uri and HttpClient, Go net/url
    ("access.base_url_invalid", "ValueError: unknown url type: 'localhost:8000/v1/chat/completions'\n"),
    ("access.base_url_invalid", "java.lang.IllegalArgumentException: URI is not absolute\n"),
    ("access.base_url_invalid", "System.UriFormatException: Invalid URI: The format of the URI could not be determined.\n"),
    ("access.base_url_invalid", "System.InvalidOperationException: An invalid request URI was provided. Either the request URI must be an "
                                "absolute URI or BaseAddress must be set.\n"),
    ("access.base_url_invalid", 'parse "http://localhost:8000 /v1": invalid character " " in host name\n'),
    # OpenRouter's 404 for a model no provider serves, Google's model 404
    ("access.model_not_found", '{"error":{"message":"No endpoints found for meta-llama/llama-3-70b:free.","code":404}}\n'),
    ("access.model_not_found", "google.api_core.exceptions.NotFound: 404 models/gemini-pro is not found for API version v1beta\n"),
    # the answer without its choices: JavaScript, the openai-python models
    ("access.response_invalid", "TypeError: Cannot read properties of undefined (reading 'choices')\n"),
    # urllib3's ProxyError, whose cause (the proxy's 403 to CONNECT) is no key refusal and no NCCL socket
    ("access.proxy_failed", "ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: 403 Forbidden'))\n"),
    # the client's own words for an unset key variable
    ("access.key_missing", "Error: OPENAI_API_KEY environment variable is not set\n"),
    # urllib3 2.x connection.py NameResolutionError (https://github.com/docker/hello-genai/issues/11)
    ("access.dns_failed", "Failed to resolve 'model-runner.docker.internal' ([Errno -2] Name or service not known)\n"),
    # what a 404 names (shared/codes.md: model_not_found is "model ID not served", base_url_invalid "its path is wrong"):
    # openai-node APIError.makeMessage with no body (corpus/i206: DashScope's native /api/v1 base URL) names neither: the path
    ("access.base_url_invalid", "which is working for my local, while get  `404 status code (no body)`, no place to check the request id\n"),
    # requests models.py raise_for_status: f"{status} Client Error: {reason} for url: {url}"; an API URL's 404, not the Hub's
    ("access.base_url_invalid", "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: http://localhost:8000/chat/completions\n"),
    # ... and its 401 from an API host is the key's, not a gated Hugging Face repo
    ("access.key_rejected", "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: http://localhost:8000/v1/chat/completions\n"),
    # Azure OpenAI's 404 for a URL no deployment is behind (https://github.com/microsoft/autogen/issues/3953, fixed with the
    # deployment's endpoint URL; corpus/i205 "404 Resource not found")
    ("access.base_url_invalid", "Error occurred while processing message: Error code: 404 - {'error': {'code': '404', 'message': "
                                "'Resource not found'}}\n"),
    # Google's NOT_FOUND for a model its API does not serve (https://github.com/gzzhongqi/geminicli2api/issues/23)
    ("access.model_not_found", 'ERROR:root:Google API returned status 404: {\n  "error": {\n    "code": 404,\n'
                               '    "message": "Requested entity was not found.",\n    "status": "NOT_FOUND"\n  }\n}\n'),
    # corpus/i260 (OpenHands#16365): a bare "Model not found" after its status, not a model file
    ("access.model_not_found", "As a result, the endpoint returns a `400 Model not found` error.\n"),
    # urllib3 connectionpool.py's ProxyError around the failure to reach the proxy: the proxy's host does not resolve
    # (https://github.com/SevaSk/ecoute/issues/84), TLS spoken to a plain-HTTP proxy (https://github.com/openai/openai-python/issues/463)
    ("access.proxy_failed", "Error communicating with OpenAI: HTTPSConnectionPool(host='api.openai.com', port=443): Max retries exceeded "
                            "with url: /v1/chat/completions (Caused by ProxyError('Cannot connect to proxy.', NewConnectionError('<urllib3."
                            "connection.HTTPSConnection object at 0x000001C19A018820>: Failed to establish a new connection: [Errno 11001] "
                            "getaddrinfo failed')))\n"),
    ("access.proxy_failed", "urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='api.openai.com', port=443): Max retries exceeded "
                            "with url: /v1/chat/completions (Caused by ProxyError('Unable to connect to proxy', SSLError(SSLEOFError(8, "
                            "'EOF occurred in violation of protocol (_ssl.c:1129)'))))\n"),
    # corpus/h280 (ITSpecialist111/ai_automation_suggester#142): a traceback pasted from its middle, whose bare TimeoutError
    # aiohttp's TimerContext.__exit__ raised (helpers.py `raise asyncio.TimeoutError from exc_val`)
    ("access.timeout", "with self._timer:\n         ^^^^^^^^^^^\n  File \"/usr/local/lib/python3.13/site-packages/aiohttp/helpers.py\", "
                       "line 685, in __exit__\n    raise asyncio.TimeoutError from exc_val\nTimeoutError\n"),
    # the OpenAI API's 404 for a route it lacks, as relays copy it (openai/openai-node#132): the path decides; corpus/i245
    # (CherryHQ/cherry-studio#6279) a relay without the Responses API, and a base URL ending in /v1 before /v1/messages
    ("access.protocol_mismatch", "404 Invalid URL (POST /v1/responses)\n"),
    ("access.base_url_invalid", "HTTP 404 invalid_request_error: Invalid URL (POST /v1/v1/messages)\n"),
    # LiteLLM openai.py: no completion in the body (BerriAI/litellm#25766, corpus/i279: SSE to a stream: false request)
    ("access.response_invalid", "OpenAIException - Empty or invalid response from LLM endpoint.\n"
                                "Received: 'data: {\"id\":\"chatcmpl-...\",\"object\":\"chat.completion.chunk\",...}'\n"),
    # gateways' error bodies for a model they do not serve, with or without its name (a FastAPI detail; a Go gateway's
    # {"error": {"message": "Model is not available", ...}}): the body names the model, so the 404/400 is the model's
    ("access.model_not_found", '{"detail":"Model not found"}\n'),
    ("access.model_not_found", 'HTTP 404: {"error": {"message": "Model is not available", "type": "invalid_request_error"}}\n'),
    # the Vercel AI SDK's error answer with no body (provider-utils response-handler.ts: the status text alone): a bare 404
    ("access.base_url_invalid", "APICallError [AI_APICallError]: Not Found\n"),
    # Ollama's server/routes.go 400 for an empty model field
    ("access.model_id_missing", '{"error":"model is required"}\n'),
    # openai-python _exceptions.py APIResponseValidationError's own words
    ("access.response_invalid", "openai.APIResponseValidationError: Data returned by API invalid for expected schema.\n"),
    # vLLM's "does not exist" with the backticks a markdown paste ate
    ("access.model_not_found", "The model llama-3-70b does not exist.\n"),
    # LiteLLM get_llm_provider_logic.py with an empty model setting (corpus/i257, OpenHands#5169): no ID, not an unknown one
    ("access.model_id_missing", "litellm.exceptions.BadRequestError: litellm.BadRequestError: LLM Provider NOT provided. Pass in the LLM "
                                "provider you are trying to call. You passed model=undefined/undefined\n"),
]


@pytest.mark.parametrize(("code", "text"), CASES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(CASES)])
def test_the_cause_the_error_names_ranks_first(tmp_path: Path, code: str, text: str) -> None:
    found = findings_of(written(tmp_path, text))
    assert found and found[0].code == code, [f.code for f in found]
    assert found[0].tier == "", "a client's output is evidence, not a statement"


def test_a_gateway_timeout_explains_the_html_page_it_comes_in(tmp_path: Path) -> None:
    found = findings_of(written(tmp_path, CASES[2][1]))
    assert found[0].code == "access.timeout" and "access.response_invalid" in found[0].explains
    assert "504 Gateway Time-out" in found[0].evidence[0]


def test_a_bare_404_yields_to_a_cause_the_log_names(tmp_path: Path) -> None:
    # a key error and a bare status 404 in one paste: the 404 is not read as the base URL's
    found = findings_of(written(tmp_path, "openai.AuthenticationError: Error code: 401 - Incorrect API key provided: sk-abc...wxyz\n"
                                          "Status: 404 (Not Found)\n"))
    assert found[0].code == "access.key_rejected"
    assert "access.base_url_invalid" not in [f.code for f in found]


def test_an_empty_bearer_is_missing_a_quoted_key_is_malformed(tmp_path: Path) -> None:
    found = findings_of(written(tmp_path, "h11._util.LocalProtocolError: Illegal header value b'Bearer \"sk-abc123def456\"'\n"))
    assert found[0].code == "access.key_malformed"


# (code, a person's sentence): what failure_prose reads from words
SAID = [
    ("access.timeout", "Every request through Cloudflare ends in a 524 after 100 seconds."),
    ("access.key_missing", "OpenRouter answers 401 Missing Authentication header although the key is in the settings."),
    ("access.quota_exceeded", "OpenRouter says the key can only afford 0 tokens."),
    # https://github.com/databricks/unity-gateway/pull/361 (a stalled stream) and https://github.com/mostlygeek/llama-swap/pull/237 (nginx's switch)
    ("access.streaming_broken", "Claude Code could receive no downstream bytes for minutes and report that the response stopped arriving."),
    ("access.streaming_broken", "When I set stream=True, the response only arrives after the whole generation is done."),
    ("access.streaming_broken", "Added the \"X-Accel-Buffering: no\" HTTP response header to all proxied responses."),
    ("access.timeout", "The generation keeps timing out after 60 seconds."),
    ("access.timeout", "调用接口的时候请求超时了"),
    ("access.streaming_broken", "开启流式输出后，内容还是一次性返回"),
    ("access.base_url_invalid", "Without /v1 the server returns 404."),
    ("access.base_url_invalid", "The api_base is missing the /v1 suffix."),
    # https://github.com/tashfeenahmed/freellmapi/issues/235
    ("access.protocol_mismatch", "Claude Code is not directly compatible with FreeLLMAPI because they speak different wire formats."),
]


@pytest.mark.parametrize(("code", "sentence"), SAID)
def test_a_sentence_names_the_cause(code: str, sentence: str) -> None:
    said = failure_prose.statements("issue.md", sentence + "\n")
    assert [s.code for s in said] == [code]


@pytest.mark.parametrize("sentence", [
    "The model times out while loading.",  # load.startup_timeout's, not the request's
    "NCCL timed out during all-reduce.",
    "I set the timeout to 600 seconds.",  # a setting, no failure
    "请问怎么设置超时？",  # a question
    "模型加载超时",  # loading
])
def test_a_timeout_that_is_no_request_timeout_is_not_one(sentence: str) -> None:
    assert "access.timeout" not in [s.code for s in failure_prose.statements("issue.md", sentence + "\n")]


def test_resolving_an_authentication_method_is_no_dns_failure() -> None:
    # anthropic-sdk-python _client.py _validate_headers
    said = failure_prose.statements("issue.md", '"Could not resolve authentication method. Expected either api_key or auth_token to be set."\n')
    assert "access.dns_failed" not in [s.code for s in said]


def test_resolving_an_authentication_method_cut_at_80_columns_is_no_dns_failure(tmp_path: Path) -> None:
    # anthropic-sdk-typescript src/client.ts validateHeaders, as a terminal cuts it: the first 80 columns alone are an
    # exception line whose family words ("could not resolve") name no host
    line = ('TypeError: "Could not resolve authentication method. Expected either apiKey or authToken to be set. Or for one of '
            'the "X-Api-Key" or "Authorization" headers to be explicitly omitted"')
    found = findings_of(written(tmp_path, "\n".join(line[i:i + 80] for i in range(0, len(line), 80)) + "\n"))
    assert [f.code for f in found] == ["access.key_missing"]


def test_a_context_overrun_the_client_relays_is_no_access_code_but_sized(tmp_path: Path) -> None:
    """shared/codes.md has no access code for a prompt longer than the model's context; the corpus labels the client's side
    of it access.unrecognized_failure (corpus/README.md, f031-f086), so the client's copy of llama-server's 400 is that code,
    with the size to restart the server with; the engine's own log line of it stays load.config_invalid."""
    # https://github.com/arbs-io/github-copilot-llm-gateway/issues/55 (corpus/f059), the lines the terminal wrapped joined
    relayed = ('Reason: Chat completion request failed: Chat completion failed: 400 Bad Request - {"error":{"code":400,"message":'
               '"request (124315 tokens) exceeds the available context size (123904 tokens), try increasing it","type":'
               '"exceed_context_size_error","n_prompt_tokens":124315,"n_ctx":123904}}\n')
    found = findings_of(written(tmp_path, relayed))
    assert [f.code for f in found] == ["access.unrecognized_failure"]
    assert found[0].title == "the server refused the request: a prompt of 124315 tokens does not fit the 123904-token context"
    assert found[0].fixes[0].command == "--ctx-size 124928"  # (124315 + 1) rounded up to whole 1024s
    # llama.cpp tools/server/server.cpp send_error, as llama-server logs it (catalogue llamacpp.jsonl)
    engine = findings_of(written(tmp_path, "srv    send_error: task id = 0, error: the request exceeds the available context size, "
                                           "try increasing it\n"))
    assert [f.code for f in engine][:1] == ["load.config_invalid"]
