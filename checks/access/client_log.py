"""What a client's error output in a log says about the channel to the model.

Judged from log events only (not from the endpoint probe): tracebacks and messages of the OpenAI
SDK, httpx/httpcore, requests, curl, and the server's own access log lines ("POST /chat/completions
HTTP/1.1" 404). A load-layer crash in the same log explains refused connections and 5xx answers,
so those rank after it.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit, urlunsplit

from llm_doctor.checks.access.provider_words import QUOTA, key_echo_code
from llm_doctor.checks.access.streaming import buffering_fixes
from llm_doctor.checks.load import log_events as le
from llm_doctor.checks.load.config import context_finding
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.logs import LogEvent
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logparse.failures import KINDS as GENERIC
from llm_doctor.logview import LogView

KIND_CODE = {
    "client_quota": "access.quota_exceeded",
    "client_rate_limit": "access.rate_limited",
    "client_auth": "access.key_rejected",
    "client_key_malformed": "access.key_malformed",
    "client_key_missing": "access.key_missing",
    "client_stream_cut": "access.streaming_broken",
    "client_stream_buffered": "access.streaming_broken",
    "client_stream_invalid": "access.streaming_broken",
    "client_tls": "access.tls_failed",
    "client_dns": "access.dns_failed",
    "client_proxy": "access.proxy_failed",
    "client_refused": "access.connect_failed",
    "client_model_missing_id": "access.model_id_missing",
    "client_model_not_found": "access.model_not_found",
    "client_timeout": "access.timeout",
    "client_bad_response": "access.response_invalid",
    "client_server_error": "access.server_error",
    "client_url_malformed": "access.base_url_invalid",
    "client_protocol": "access.protocol_mismatch",
}
CODES = sorted(set(KIND_CODE.values()) | {"access.base_url_invalid", "access.protocol_mismatch", "access.server_error",
                                         "access.key_malformed", "access.streaming_broken", "access.unrecognized_failure"})
OPENAI_PATHS = re.compile(r"^/(?:chat/completions|completions|models|embeddings|responses|messages)\b")
MODEL_PATHS = re.compile(r"^/v1/(?:chat/completions|completions|embeddings)\b")
# a 404 here says the model is not served (vLLM/SGLang answer an unknown model with 404)
GENERATION_PATHS = re.compile(r"^/v1/(?:chat/completions|completions)\b")
# a 404 here says the server has no such API: Anthropic/Responses/Ollama routes, and embeddings,
# which vLLM serves only for pooling models
# Ollama's native routes (server/routes.go), asked of a server that is not Ollama (vLLM, SGLang, LM Studio): an Ollama
# connection, such as Open WebUI's, where an OpenAI one belongs
OLLAMA_NATIVE = re.compile(r"^/api/(?:chat|generate|tags|show|embed|embeddings|version|ps|pull)\b")
OTHER_PROTOCOL = re.compile(r"^/v1/(?:responses|messages|embeddings)\b|" + OLLAMA_NATIVE.pattern)
# the generation routes of the engines' own APIs (TGI's and SGLang's /generate and /generate_stream, vLLM's old
# api_server) and any other /v1 path: asked for with GET too by clients and people trying a server out. A 404 to an
# API call with a body, whatever its path, is one too: browsers' 404s (/favicon.ico, /) are no failure of the channel.
NATIVE_ROUTES = re.compile(r"^/(?:generate(?:_stream)?|v1/[\w/.-]+)(?:$|[?#])")
# (the API masks the key it received but keeps its first characters: a quote there was part of the key). Another
# provider's well-formed key (sk-ant-, gsk_, AIza, hf_, xai-) is not here: codes.md's access.key_rejected is a key
# "for another provider", and provider_words.key_echo_code reads a long masked key the same way
KEY_SHAPE = re.compile(r"Incorrect API key provided: (?:https?:|\*{3}|Bearer|['\"‘’“”])|API key.*(?:whitespace|newline)|"
                       # undici's header check (and Roo Code's words for it): a character no header can carry
                       r"Cannot convert argument to a ByteString|API key contains invalid characters|"
                       # a provider that checks the key's shape before looking it up
                       r"\b(?:invalid|malformed|wrong) (?:API[ _-]?)?key format\b|\bAPI key format is (?:invalid|wrong)\b", re.I)

# a cause the client saw first-hand explains the generic errors its library wrapped it in
EXPLAINS = {
    # (a forward proxy's 403 to a CONNECT tunnel is its own refusal, not the server's of the key)
    "access.proxy_failed": ["access.response_invalid", "access.server_error", "access.connect_failed", "access.key_rejected"],
    "access.tls_failed": ["access.connect_failed"],
    "access.dns_failed": ["access.connect_failed"],
    "access.key_malformed": ["access.key_rejected"],
    "access.key_missing": ["access.key_rejected"],
    # (a proxy relays the provider's quota refusal as its own 4xx/5xx: Continue's model proxy answers it with 500)
    "access.quota_exceeded": ["access.rate_limited", "access.server_error"],
    # (a URL the client could not parse never connected: its "Connection error." wrapper is this)
    "access.base_url_invalid": ["access.model_not_found", "access.response_invalid", "access.connect_failed", "access.dns_failed"],
    "access.protocol_mismatch": ["access.model_not_found"],
    # (the rest of a "model `default` not found" answer, printed on lines that name no model)
    "access.model_id_missing": ["access.model_not_found"],
    # (a gateway answers a model it has no channel for with 503: one-api's "无可用渠道", new-api's model_not_found)
    "access.model_not_found": ["access.server_error"],
    # a gateway's 5xx error page is HTML, not the API's JSON: the 5xx is the cause, the bad body its symptom
    "access.server_error": ["access.response_invalid"],
    # (so is a gateway's 504 / 524 page)
    "access.timeout": ["access.response_invalid"],
}
TITLES = {
    "access.quota_exceeded": ("the account's quota or credit is exhausted", "Add credit / raise the quota for this key's account, or use another key"),
    "access.rate_limited": ("the provider rate-limited the requests (429)", "Send fewer requests/tokens per minute (lower concurrency) and retry with backoff"),
    "access.key_missing": ("the client has no API key to send (none passed, the variable unset)",
                           "Give the client the key the server expects; a server started without --api-key accepts any non-empty value"),
    "access.key_rejected": ("the server rejected the API key (401/403)", "Use the key the server expects (vLLM: the value of VLLM_API_KEY, or of --api-key)"),
    "access.key_malformed": ("the API key is not a key (URL, masked value, prefix, quotes, whitespace, or a character no HTTP header carries)",
                             "Set the key itself, without 'Bearer ', quotes, spaces, a URL or characters pasted along with it"),
    "access.tls_failed": ("TLS certificate verification failed", "Trust the server's CA: SSL_CERT_FILE=/path/ca.pem (or REQUESTS_CA_BUNDLE), or use http:// for a plain-HTTP server"),
    "access.dns_failed": ("the server's host name does not resolve", "Use a host name resolvable from the client (inside Docker: the service name on a shared network, or the host IP)"),
    "access.proxy_failed": ("an HTTP proxy in the path answered instead of the server", "Bypass the proxy for the server: NO_PROXY=<server host>,localhost,127.0.0.1"),
    "access.connect_failed": ("the client could not connect to the server", "Start the server / fix host and port; from another machine bind it with --host 0.0.0.0 and open the port"),
    "access.model_id_missing": ("the request carried no model ID", "Set the model in the client (the served name, see GET /v1/models)"),
    "access.model_not_found": ("the model ID is not served", "Use a served model ID (GET /v1/models), or start the server with --served-model-name <name>"),
    "access.timeout": ("the request timed out", "Raise the client timeout or stream the response (long generations)"),
    "access.response_invalid": ("the answer was not the expected JSON", "Check the base URL points at the API (…/v1) and nothing in between rewrites the answer"),
    "access.server_error": ("the server answered 5xx", "Read the server's log around that request for the exception"),
    "access.base_url_invalid": ("the server has no route at the requested path: the base URL is not the API's root (/v1 missing or doubled, "
                                "a path too many)", "Set the base URL to the API's root, http://<host>:<port>/v1"),
    "access.protocol_mismatch": ("the client uses an API this server does not implement", "Point the client at /v1/chat/completions (OpenAI Chat API), or use a server that implements this API"),
    "access.streaming_broken": ("the SSE stream ends without `data: [DONE]`", "Upgrade the server (the stream must end with `data: [DONE]`), or disable streaming in the client"),
}

# the stream's connection closed before its last chunk: the server (or a proxy between) hung up mid-answer
STREAM_CUT = ("the streamed answer was cut off before its last chunk",
              "Read the server's log at that moment (a crash or restart ends streams), and any proxy's read timeout in between "
              "(nginx proxy_read_timeout, a load balancer's idle timeout); a long answer outlives a short one")


# 407 Proxy Authentication Required: a forward proxy (the env's HTTPS_PROXY, a corporate one) wants credentials
PROXY_AUTH = "the HTTP proxy in the path demands authentication (407 Proxy Authentication Required)"
PROXY_AUTH_FIX = ("Give the client the proxy's user name and password (in the HTTPS_PROXY URL before the host, or the tool's proxy "
                  "settings), or bypass the proxy for this server")


# a stream: true request answered with no body, events that are not JSON, or not text/event-stream
STREAM_INVALID = ("the stream: true answer is not a valid event stream (no body, events that are not JSON, or another Content-Type)",
                  "Request once with curl -N and read what arrives: a proxy or gateway in between that rewrites or does not pass "
                  "text/event-stream, or a server that ignores stream: true, is the cause")


# the JSON parsers' words for a document that stops mid-value (V8, SpiderMonkey, serde_json, Python's json): read from a
# stream, one event handed to the parser before all of it arrived
CUT_JSON = re.compile(r"Unterminated string in JSON|Expected ',' or [}\]] after|Unexpected end of JSON input|unterminated string literal|"
                      r"end of data (?:while|when|after)|unexpected end of data|EOF while parsing|Unterminated string starting at|Expecting ',' delimiter", re.I)
# the HTTP clients' words for a body that ended before its length or last chunk (httpx/h11, aiohttp, urllib3's and
# http.client's IncompleteRead, curl's 92 for an HTTP/2 stream, reqwest's body decode): while a stream is read, the
# stream was cut mid-answer
CUT_BODY = re.compile(r"peer closed connection without sending complete message body|Response payload is not completed|"
                      r"\bIncompleteRead\(|HTTP/2 stream \d+ was not closed cleanly|error decoding response body", re.I)
CUT_READ = re.compile(f"{CUT_JSON.pattern}|{CUT_BODY.pattern}", re.I)
STREAM_SPLIT = ("a streamed event's JSON was parsed before all of it arrived: the client parses each network read as whole events, "
                "and an event split across two reads is cut JSON",
                "Parse the stream with an SSE parser that buffers up to each blank line (the SDK's own stream, eventsource-parser), "
                "not JSON.parse on every chunk the network delivers; or update the client to a version that does")


# the HTTP clients' words for a body that is not the compression its Content-Encoding names (urllib3/requests, Python's
# zlib under httpx, aiohttp, Bun's fetch): most often a relay or proxy that let its own client decode the upstream answer
# and forwarded the upstream `Content-Encoding: gzip` with the plain body
DECODE_FAILED = re.compile(r"but failed to decode it|Error -3 while decompressing data|Can not decode content-encoding: (?:gzip|deflate)|"
                           r"Decompression error: ZlibError", re.I)
STREAM_PARSE = re.compile(r"\b(?:stream(?:ing|ed)?|SSE|event[- ]?stream)\b[^.\n]{0,30}?\b(?:decod\w*|pars\w*|deserializ\w*)\b[^.\n]{0,20}?\b(?:error|fail\w*)\b|"
                          r"\b(?:fail\w*|error|unable|could ?n[o']t|cannot) (?:to |while |when )?(?:decod\w*|pars\w*|deserializ\w*) (?:the )?"
                          r"(?:SSE|stream(?:ing|ed)?|event[- ]?stream|chunk)\b", re.I)
STREAM_WORDS = re.compile(r"\bstream(?:ing|ed|s)?\b|\bSSE\b|text/event-stream", re.I)
DECODE_FINDING = ("the answer's Content-Encoding says it is compressed and its body is not: a proxy or relay in between decoded "
                  "the upstream answer and forwarded the upstream's Content-Encoding header with the plain body",
                  "Make the relay drop Content-Encoding and Content-Length from the upstream headers when it forwards a body its "
                  "HTTP client decoded (or have it ask upstream with Accept-Encoding: identity); until then, point the client at "
                  "the upstream directly")


# JSON.parse("[DONE]") in V8's words before and since 11.x, and Python's json.loads("[DONE]"): the OpenAI stream's last event is no JSON
# Vercel AI SDK's streamText raises NoOutputGeneratedError when its stream closed before one step finished
# (vercel/ai packages/ai/src/generate-text/stream-text.ts): it names no cause, and masks the provider error the stream
# carried (an APICallError: 401, 429, 5xx), so where the same log states that one, it ranks after it
NO_OUTPUT = re.compile(r"No output generated\. Check the stream for errors", re.I)
NO_OUTPUT_FINDING = ("the AI SDK's stream closed before the model's first step finished (NoOutputGeneratedError names no cause)",
                     "Log the stream's error parts (streamText onError, or read fullStream): the provider's error the stream "
                     "carried (its status and body) is the cause; a stream cut by a proxy or a server restart carries none")
DONE_PARSED = re.compile(r"Unexpected token D in JSON at position 1\b|\"\[DONE\]\" is not valid JSON|Expecting value: line 1 column 2 \(char 1\)")
DONE_AS_JSON = ("the client parses the stream's terminator `data: [DONE]` as JSON: the OpenAI-style stream ends with it",
                "Stop reading at the `data: [DONE]` event instead of JSON.parse-ing it (or use the SDK's stream reader); update the client")


# a stream told to arrive all at once, in bursts or not at all (no error raised): something in between buffers it
STREAM_BUFFERED = "the stream is held back on its way: a proxy or gateway in between buffers the events and releases them late, in bursts"


# the wrappers that name no cause, printed without it: undici's fetch() rejection (lib/web/fetch/index.js `new
# TypeError('fetch failed', { cause })`), the Stainless SDKs' APIConnectionError (openai-python/openai-node/anthropic
# `message="Connection error."`, its cause on later lines or in `cause:`), as Claude Code (`API Error (Connection error.)`)
# and Open WebUI's routers (`log.exception(f"Connection error: {e}")` with an empty str(e)) print them
CONNECT_WRAPPER = re.compile(r"\bTypeError: fetch failed\W*$|\bConnection error[.:]?\W*$|\(Connection error\.\)")
# a connection-error wrapper around a timeout, on one line (LiteLLM's `APIConnectionError: OpenAIException - Request timed
# out.`, an APIConnectionError whose cause is httpx's ReadTimeout): the request was sent and its answer did not come in time
WRAPPED_TIMEOUT = re.compile(r"\bRequest timed out\b|\bRead ?Timeout\b|\bRead timed out\b|\bAPITimeoutError\b|"
                             r"\btimeout awaiting response headers\b|\bHeaders ?Timeout|\brequest\b[^.]{0,40}?\btimed out\b|\btimed out after \d", re.I)
DOCKER_HOST = re.compile(r"\bhost\.docker\.internal\b", re.I)
DOCKER_HOST_FIX = "docker run --add-host=host.docker.internal:host-gateway ... (compose: extra_hosts: [\"host.docker.internal:host-gateway\"])"
CONNECT_WORDS = re.compile(r"refused|ECONNREFUSED|reset|unreachable|No route|Connect ?Timeout|Connect(?:ion)? timed out|connect ETIMEDOUT|"
                           r"Cannot connect|Failed to establish|Name or service|getaddrinfo|ENOTFOUND", re.I)
RESOLVED = re.compile(CONNECT_WORDS.pattern + r"|Failed to connect to \S+ port|Connect call failed|timed? ?out", re.I)
# a 404 that names no path: the web framework's own (client_route_not_found) or a bare status (client_not_found)
BARE_404 = ("client_route_not_found", "client_not_found")
# client_failed: a tool's catch-all ("Please check the LM Studio developer logs"): read, but it names no
# cause, so unless another line does the failure stays access.unrecognized_failure
EVENTS = [*KIND_CODE, "http_response", "client_route_not_found", "client_not_found", "client_failed", "context_exceeded"]


@check("access.client_log", "access", codes=CODES, events=EVENTS)
def client_log(facts: Facts, log: LogView) -> Outcome:
    """Client-side error output in the log (auth, URL, network, model ID, response shape)."""
    logs = log.logs
    found: dict[str, list[LogEvent]] = {}
    s = logs.setup
    bare: list[LogEvent] = []
    for e in log.events():
        if _is_404(e) and ANTHROPIC_ROUTE_MISS.search(text := " ".join(e.lines)) and not ANTHROPIC_CLIENT.search(text):
            found.setdefault("access.protocol_mismatch", []).append(e)  # the Anthropic API's own 404 to an OpenAI-style client
            continue
        if (e.kind in BARE_404 or _unnamed_404(e) or _pathless_404(e)) and not e.values.get("path") and not _speaks_anthropic(e):
            bare.append(e)
            continue
        code = _anthropic_404(e, s.base_url) if _speaks_anthropic(e) else _code(e)
        if code:
            found.setdefault(code, []).append(e)
    # a bare "404 page not found" body is the answer a request line of the same log shows with its path: that
    # path says what the 404 means; alone it reads as a base URL without the API's root
    # Ollama's request log is its own: a 5xx there is the answer to a failure the same log states (its runner's
    # crash), which the check that knows that failure judges
    served = found.get("access.server_error", [])
    if served and all("[GIN]" in " ".join(e.lines) for e in served) and log.other_failures():
        del found["access.server_error"]
    # a bare status 404 ("Status: 404 (Not Found)", "HTTP 404") is weaker: it names neither the path nor a model, and counts
    # only where nothing else in the log says what failed; a server that had the route and not the model says which model
    # (vLLM/SGLang "The model `x` does not exist", Ollama "model 'x' not found"), so a 404 without one is the path's
    routed = next((c for c, evs in found.items() if any(_is_404(e) and _path(e) for e in evs)), None)
    # a client whose code calls the Responses API asked for /v1/responses: its pathless 404 is that route's, as a 404
    # naming /v1/responses is (OTHER_PROTOCOL)
    unrouted = "access.protocol_mismatch" if s.wire_api == "responses" else "access.base_url_invalid"
    for e in bare:
        if e.kind == "client_route_not_found" or not found:
            found.setdefault(routed or unrouted, []).append(e)
    # JSON cut mid-value while a stream is being read: an event parsed before the rest of it arrived (split across reads)
    if split := [e for e in found.get("access.response_invalid", []) if CUT_READ.search(t := " ".join(e.lines))
                 and (s.stream_read or CUT_BODY.search(t) and STREAM_WORDS.search(t))]:
        _move(found, split, "access.response_invalid", "access.streaming_broken")
    # an answer the client could not parse, in a line that says it was a stream's ("Stream decode error", "Failed to parse SSE
    # data", "error parsing stream chunk"): the stream's events were malformed, not the answer's body
    if streamed := [e for e in found.get("access.response_invalid", []) if STREAM_PARSE.search(" ".join(e.lines))]:
        _move(found, streamed, "access.response_invalid", "access.streaming_broken")
    # a body its Content-Encoding misdescribes, while a stream is read (a reader's frame, or the line says so): the stream broke
    if decoded := [e for e in found.get("access.response_invalid", []) if DECODE_FAILED.search(t := " ".join(e.lines))
                   and (s.stream_read or STREAM_WORDS.search(t))]:
        _move(found, decoded, "access.response_invalid", "access.streaming_broken")
    if s.sse_chunks >= 2 and not s.sse_done:  # a stream was quoted and its terminator is missing
        found.setdefault("access.streaming_broken", [])
    # a bare wrapper ("TypeError: fetch failed", "Connection error.") names no cause: where the log prints one (its `[cause]:`,
    # the exception it was raised from), that is it
    if (refused := found.get("access.connect_failed")) and len(found) > 1:
        named = [e for e in refused if not CONNECT_WRAPPER.search(e.lines[0] if e.lines else "")]
        if named:
            found["access.connect_failed"] = named
        else:
            del found["access.connect_failed"]
    # a connection to host.docker.internal that failed in words naming no step past the lookup (no refusal, reset or timeout,
    # not curl's "Failed to connect to <host> port", which resolved), where nothing maps the name for the container: Docker
    # Engine on Linux resolves host.docker.internal only with --add-host=host.docker.internal:host-gateway
    if (refused := found.get("access.connect_failed")) and not s.docker_host_mapped and (
            unresolved := [e for e in refused if DOCKER_HOST.search(t := " ".join(e.lines)) and not RESOLVED.search(t)]):
        _move(found, unresolved, "access.connect_failed", "access.dns_failed")
    # a connection that failed (refused, reset, hung up) while the environment sends the client through a proxy and NO_PROXY
    # does not exempt the host: the proxy's leg failed, or the proxy cut the connection to a host it cannot reach
    if (refused := found.get("access.connect_failed")) and _proxied(refused, s.proxy_env, s.no_proxy, s.base_url):
        found.setdefault("access.proxy_failed", []).extend(found.pop("access.connect_failed"))
    # a TLS handshake that met plain HTTP (wrong version number, EOF, no TLS record) through a proxy the environment gives as
    # https://: the local proxies (Clash, v2ray, squid, privoxy) speak plain HTTP on their port, and since urllib3 1.26 /
    # httpx / undici an https:// proxy URL means TLS to the proxy itself, so the handshake with the proxy is what failed
    if (tls := found.get("access.tls_failed")) and s.proxy_env.lower().startswith("https://") and all(
            PLAIN_HTTP_TLS.search(" ".join(e.lines)) for e in tls) and _proxied(tls, s.proxy_env, s.no_proxy, s.base_url):
        found.setdefault("access.proxy_failed", []).extend(found.pop("access.tls_failed"))
    # a 502 where the log names the proxy variables, or where the server is on the client's own host and no gateway is named:
    # the proxy the environment sends the client through answered (engines' own servers never say Bad Gateway)
    proxied_502 = ""
    if (bad := [e for e in found.get("access.server_error", []) if BAD_GATEWAY.search(" ".join(e.lines))]) and (
            s.proxy_named or (s.loopback_url and not s.proxy)):
        _move(found, bad, "access.server_error", "access.proxy_failed")
        proxied_502 = ("the log names the proxy variables (HTTP_PROXY / HTTPS_PROXY / NO_PROXY)" if s.proxy_named else
                       "the server is on the client's own host (a loopback URL) and no gateway is named: only a proxy answers 502 there")
    not_found = [e for e in log.events() if _is_404(e) and not _speaks_anthropic(e) and not _browser(e)]
    doubled = [e for e in not_found if _doubled(e)]
    if doubled and "access.protocol_mismatch" not in found:
        found.setdefault("access.base_url_invalid", []).extend(x for x in doubled if x not in found.get("access.base_url_invalid", []))
    if not_found and "access.protocol_mismatch" not in found and _base_url_fix(s.base_url, not_found):
        found.setdefault("access.base_url_invalid", []).extend(x for x in not_found if x not in found.get("access.base_url_invalid", []))
    if pasted := _pasted_endpoint_failures(log, found):
        found["access.base_url_invalid"] = pasted
    findings = []
    for code, events in found.items():
        title, fix = TITLES[code]
        evidence = le.evidence(events) if events else [f"{s.sse_chunks} `data: {{...}}` chunks and no `data: [DONE]`"]
        fixes = [Fix(fix)]
        anthropic = [e for e in events if _speaks_anthropic(e)]
        if code == "access.base_url_invalid" and any(e.kind == "client_url_malformed" for e in events):
            title, fixes = URL_MALFORMED, _malformed_fixes(events)
        elif code == "access.base_url_invalid" and anthropic:
            title, fixes = ANTHROPIC_V1, [Fix(ANTHROPIC_V1_FIX, f"ANTHROPIC_BASE_URL={_anthropic_root(s.base_url)}")]
            evidence += [f"configured base URL {s.base_url}"]
        elif code == "access.protocol_mismatch" and any(OLLAMA.search(" ".join(e.lines)) and _path(e).startswith("/v1/messages")
                                                        for e in events):
            title, fix = OLLAMA_MESSAGES
            fixes = [Fix(fix, "curl -fsSL https://ollama.com/install.sh | sh")]
        elif code == "access.protocol_mismatch" and any(OLLAMA_NATIVE.search(_path(e)) for e in events) and not any(
                OLLAMA.search(" ".join(e.lines)) for e in events):
            title, fix = OLLAMA_API_ELSEWHERE
            fixes = [Fix(fix)]
        elif code == "access.protocol_mismatch" and (absent := str(le.first_value(events, "absent")).lower()) in WRONG_BODY:
            title, fix = WRONG_BODY[absent]
            fixes = [Fix(fix)]
        elif code == "access.protocol_mismatch" and any(ANTHROPIC_FORMAT.search(" ".join(e.lines)) for e in events):
            title, fix = OPENAI_AT_MESSAGES
            fixes = [Fix(fix)]
        elif code == "access.protocol_mismatch" and _responses_unserved(events, bare, s.wire_api):
            title, fixes = RESPONSES_UNSERVED, [Fix(RESPONSES_UNSERVED_FIX)]
        elif code == "access.protocol_mismatch" and any(e.kind == "client_protocol" for e in events):
            title, fixes = CHAT_AT_MESSAGES, [Fix(CHAT_AT_MESSAGES_FIX)]
        elif code == "access.protocol_mismatch" and anthropic and len(anthropic) == len(events):
            title, fixes = NO_MESSAGES_API, [Fix(NO_MESSAGES_API_FIX)]
        elif code == "access.base_url_invalid" and (twice := next(filter(None, map(_doubled, events)), None)):
            title, fixes = _doubled_finding(*twice)
        elif code == "access.base_url_invalid" and (endpoint := _doubled_endpoint(events)):
            title = f"the requested path repeats the endpoint ({endpoint}): the base URL ends in it and the client appends it again"
            fixes = [Fix(f"Remove {endpoint} from the end of the base URL: end it at the API root (…/v1)")]
        elif code == "access.base_url_invalid" and all(map(_unrouted, events)):
            routes = ", ".join(sorted({f"{e.values.get('method')} {_path(e)}" for e in events}))
            title = f"the server has no route for {routes} (404): the client calls an API this server does not serve"
            fixes = [Fix(UNROUTED_FIX)]
        elif code == "access.base_url_invalid":
            fixes, evidence = _base_url_fixes(s.base_url, events, fix), evidence + _base_url_evidence(s.base_url)
            if s.base_url and (suffix := ENDPOINT_SUFFIX.search(urlsplit(s.base_url).path)):
                title = f"the base URL ends in the endpoint path ({suffix.group().rstrip('/')}): the client appends it again"
        if code == "access.timeout" and (setting := _timeout_setting(events)):
            fixes = [Fix(f"{fix}: {setting}")]
        if code == "access.dns_failed" and any(DOCKER_HOST.search(" ".join(e.lines)) for e in events) and not s.docker_host_mapped:
            fixes = [Fix("Map host.docker.internal to the host for the container (Docker Engine on Linux does not resolve it)",
                         DOCKER_HOST_FIX), *fixes]
        if code == "access.proxy_failed" and proxied_502:
            evidence += [proxied_502]
        if code == "access.proxy_failed" and (hosts := _no_proxy(s.base_url, events)):
            fixes = [Fix(fix, f"export NO_PROXY={hosts}")]
        if code == "access.proxy_failed" and s.proxy_env and all(KIND_CODE.get(e.kind) == "access.connect_failed" for e in events):
            title, evidence = PROXY_ENV, evidence + [f"proxy from the environment: {s.proxy_env}"] + (
                [f"NO_PROXY={s.no_proxy}"] if s.no_proxy else [])
        if code == "access.proxy_failed" and s.proxy_env.lower().startswith("https://") and any(KIND_CODE.get(e.kind) == "access.tls_failed"
                                                                                             for e in events):
            title, evidence = PROXY_TLS, evidence + [f"proxy from the environment: {s.proxy_env}"]
            fixes = [Fix(PROXY_TLS_FIX, f"export HTTPS_PROXY=http://{s.proxy_env.split('://', 1)[1]}")]
        if code == "access.proxy_failed" and any(e.values.get("status") == 407 or "Proxy Authentication Required" in " ".join(e.lines)
                                                 for e in events):
            title, fixes = PROXY_AUTH, [Fix(PROXY_AUTH_FIX), *fixes]
        if code == "access.key_malformed" and (var := le.first_value(events, "var")):
            fixes = [Fix(f"Windows cmd keeps the quotes of set {var}=\"...\" in the value: type set {var}= followed by the key, "
                         "with no quotes around it")]
        if code == "access.key_missing":
            # typed at the prompt, as checks/access/key.py has it: the key stays out of the shell history
            fixes = [Fix(fix, f"read -rs {var} && export {var}") if (var := _key_variable(events)) else Fix(fix)]
        explains = EXPLAINS.get(code, [])
        if code == "access.proxy_failed":  # the same TLS or DNS failure, where another line printed it without its ProxyError
            explains = [*explains, *(c for c in PROXY_LEG if any(_cause(e) == c for e in events))]
        severity = ""
        if code in ("access.response_invalid", "access.streaming_broken") and events and all(
                DECODE_FAILED.search(" ".join(e.lines)) for e in events):
            title, fixes = DECODE_FINDING[0], [Fix(DECODE_FINDING[1])]
        elif code == "access.streaming_broken" and events and all(NO_OUTPUT.search(" ".join(e.lines)) for e in events):
            title, fix = NO_OUTPUT_FINDING
            fixes = [Fix(fix)]
            severity = "warn" if len(found) > 1 else ""  # after the provider error the same log states; alone, the failure
        elif code == "access.streaming_broken" and any(e.kind == "client_stream_cut" or CUT_BODY.search(" ".join(e.lines)) for e in events):
            title, fix = STREAM_CUT
            fixes = [Fix(fix)]
            # the socket error a cut stream carries as its cause (undici's "other side closed", ECONNRESET) is
            # the same hang-up, after the answer had begun: not a server that could not be reached
            explains = ["access.connect_failed"]
        elif code == "access.streaming_broken" and any(e.kind == "client_bad_response" for e in events):
            title, fix = STREAM_SPLIT
            fixes = [Fix(fix)]
        elif code == "access.streaming_broken" and any(DONE_PARSED.search(" ".join(e.lines)) for e in events):
            title, fix = DONE_AS_JSON
            fixes = [Fix(fix)]
        elif code == "access.streaming_broken" and any(e.kind == "client_stream_invalid" for e in events):
            title, fix = STREAM_INVALID
            fixes = [Fix(fix)]
        elif code == "access.streaming_broken" and any(e.kind == "client_stream_buffered" for e in events):
            title, fixes = STREAM_BUFFERED, buffering_fixes(s.proxy)
            evidence += [f"between client and server: {s.proxy}"] if s.proxy else []
        findings.append(Finding(code, title, evidence, fixes, severity=severity, explains=explains))
    if relayed := [e for e in log.events("context_exceeded") if le.relayed(e, logs.engine)]:
        findings.append(_context_relayed(facts, log, relayed))
    return Outcome(findings, "" if findings else "no client-side error in the log")


def _context_relayed(facts: Facts, log: LogView, events: list[LogEvent]) -> Finding:
    """The server refused a prompt longer than its context, as the client got it. No access code names a request too long
    for the model (shared/codes.md; the corpus labels these access.unrecognized_failure), so it is that code, with the
    sizes the refusal quotes and the fixes load.config computes from them; it explains the 4xx/5xx the answer came in."""
    f = context_finding(facts, log, events)
    return Finding("access.unrecognized_failure", f"the server refused the request: {f.title}", f.evidence, f.fixes,
                   explains=["access.server_error", "access.response_invalid", "access.model_not_found"])


UNROUTED_FIX = ("Point the client at the OpenAI API the server serves: base URL http://<host>:<port>/v1, requests to POST "
                "/v1/chat/completions or /v1/completions (GET /v1/models lists the served model IDs)")


# the HTTP client could not parse the URL it was given: no scheme ("localhost:8000/v1"), or one it does not speak
URL_MALFORMED = "the base URL is not a URL the client can request (no http:// scheme, or malformed)"


def _malformed_fixes(events: list[LogEvent]) -> list[Fix]:
    """The URL the message quotes, written in full: a scheme in front, the API root as its path."""
    summary = "Write the base URL in full, with its scheme and the API root (the client appends /chat/completions itself)"
    quoted = next((str(e.values["url"]) for e in events if e.values.get("url")), "")
    if not quoted or "://" in quoted:
        return [Fix(summary)]
    host = quoted.split("/", 1)[0]
    # a bare DNS name without a port is most likely a hosted API (https); a port or a local address, a local server
    scheme = "https" if ":" not in host and re.search(r"[a-z]", host, re.I) and "." in host else "http"
    full = f"{scheme}://{quoted}"
    return [Fix(summary, f"OPENAI_BASE_URL={_corrected(full) or full.rstrip('/')}")]


# the client's own timeout setting, by the words of the client that timed out
TIMEOUT_SETTING = (
    (re.compile(r"HttpClient\.Timeout"), "HttpClient.Timeout (100 s by default; Timeout.InfiniteTimeSpan for a long streamed answer)"),
    (re.compile(r"upstream request timeout"), "the Envoy route's timeout (15 s by default; 0s turns it off for long or streamed answers)"),
    (re.compile(r"litellm", re.I), "timeout= on completion(), or timeout / stream_timeout in the proxy's litellm_params"),
    (re.compile(r"\banthropic\.|Request timed out or interrupted"), "timeout= on Anthropic(...) or per request (seconds)"),
    (re.compile(r"\bopenai\.|APITimeoutError|httpx|httpcore"), "timeout= on OpenAI(...) or per request (seconds; httpx.Timeout for read/connect apart)"),
    (re.compile(r"requests\.exceptions|urllib3|read timeout="), "the timeout= argument of requests.post(...)"),
    (re.compile(r"aiohttp|ServerTimeoutError"), "aiohttp.ClientTimeout(total=...) on the session"),
    (re.compile(r"AxiosError|timeout of \d+ms exceeded"), "the timeout option of the axios request (milliseconds)"),
    (re.compile(r"undici|UND_ERR_\w+_TIMEOUT|Headers Timeout Error|Body Timeout Error"),
     "headersTimeout / bodyTimeout of the undici Agent that fetch uses"),
    (re.compile(r"curl: \(28\)|Operation timed out after \d+ milliseconds"), "curl --max-time <seconds>"),
    (re.compile(r"Client\.Timeout|net/http: timeout"), "http.Client{Timeout: ...} (or the transport's ResponseHeaderTimeout)"),
    (re.compile(r"okhttp|InterruptedIOException: timeout"), "OkHttpClient readTimeout / callTimeout"),
    (re.compile(r"springframework"), "the RestClient's read timeout (spring.http.client.read-timeout)"),
)


def _timeout_setting(events: list[LogEvent]) -> str:
    text = " ".join(line for e in events for line in e.lines)
    return next((setting for words, setting in TIMEOUT_SETTING if words.search(text)), "")


def _no_proxy(base_url: str, events: list[LogEvent]) -> str:
    """The hosts to exempt from the proxy: the server's (the configured base URL's, else the URL a proxy's
    error page names), with the loopback names a local server is also reached by."""
    targets = [str(e.values["target"]) for e in events if e.values.get("target")]  # a proxied request line's own URL
    urls = [base_url] if base_url else targets or [u for e in events for line in e.lines for u in URL.findall(line)]
    host = urlsplit(urls[0]).hostname if urls else None
    if not host or not _internal(host):  # a public API may need the proxy: the fix is then the proxy's, not a bypass
        return ""
    return ",".join(dict.fromkeys([host, "localhost", "127.0.0.1"]))


def _move(found: dict[str, list[LogEvent]], events: list[LogEvent], source: str, target: str) -> None:
    """Re-file `events` from one code to another (a code left with none is dropped): the same lines, judged again."""
    found.setdefault(target, []).extend(events)
    found[source] = [e for e in found[source] if e not in events]
    if not found[source]:
        del found[source]


# the connection failures of a client the environment sends through a proxy
# the TLS libraries' words for a handshake answered by plain HTTP: OpenSSL's WRONG_VERSION_NUMBER / packet length too long,
# Python's SSLEOFError, Go's crypto/tls "first record does not look like a TLS handshake", Java's "Unrecognized SSL message"
PLAIN_HTTP_TLS = re.compile(r"wrong[ _]version[ _]number|UNEXPECTED_EOF_WHILE_READING|EOF occurred in violation of protocol|"
                            r"first record does not look like a TLS handshake|packet length too long|Unrecognized SSL message", re.I)
PROXY_TLS = ("the proxy the environment sets is given as https://, and the TLS handshake with it met plain HTTP: the proxy "
             "speaks HTTP on that port, the client (urllib3 1.26+, httpx, undici, curl) opened TLS to the proxy itself")
PROXY_TLS_FIX = "Give the proxy's URL with http:// (HTTPS requests still go through it as a CONNECT tunnel)"
PROXY_ENV = ("the client reaches the server through the proxy the environment sets (HTTPS_PROXY/ALL_PROXY), and the connection "
             "through it failed (refused, reset or closed): the proxy cannot reach this server, or refuses it")


def _proxied(events: list[LogEvent], proxy_env: str, no_proxy: str, base_url: str) -> bool:
    """The failed requests went through the environment's proxy: one is set and NO_PROXY exempts none of their hosts
    (the hosts the failures name, else the configured base URL's; NO_PROXY's `*` exempts all, `.example.com` and
    `example.com` a domain and its subdomains, as requests, httpx, curl and Go read it)."""
    if not proxy_env:
        return False
    exempt = [h.strip().lstrip(".").lower() for h in no_proxy.split(",") if h.strip()]
    if "*" in exempt:
        return False
    urls = [u for e in events for line in e.lines for u in URL.findall(line)] or ([base_url] if base_url else [])
    hosts = {urlsplit(u).hostname for u in urls} - {None}
    bypassed = {h for h in hosts if any(h == x.split(":")[0] or h.endswith("." + x.split(":")[0]) for x in exempt)}
    return not hosts or bool(hosts - bypassed)


def _internal(host: str) -> bool:
    """A host only reachable inside: loopback or private addresses, single-label and cluster-internal names."""
    try:
        return ipaddress.ip_address(host).is_private
    except ValueError:
        return "." not in host or host.endswith((".local", ".internal", ".svc", ".cluster.local", ".lan"))


BAD_GATEWAY = re.compile(r"\b502\b|Bad Gateway", re.I)
FIVE_XX = re.compile(r"\b50[0234] (?:Bad Gateway|Service Unavailable|Gateway Time-?out|Internal Server Error)\b|Response \[50\d\]", re.I)
# Claude Code and the Anthropic SDKs speak the Messages API: they append /v1/messages to their base URL themselves
ANTHROPIC_CLIENT = re.compile(r"\banthropic\.\w*Error\b|\bAPI Error\b|Claude Code")
ANTHROPIC_V1 = "the Anthropic base URL ends in /v1: the client appends /v1/messages itself, so it asks for /v1/v1/messages"
ANTHROPIC_V1_FIX = "Set the base URL to the server's root, without /v1"
CHAT_AT_MESSAGES = ("the request is in the OpenAI Chat format (a `tool` or `system` role in messages) and the endpoint speaks the "
                    "Anthropic Messages API, which allows only user and assistant")
CHAT_AT_MESSAGES_FIX = ("Use the client's Anthropic provider for this endpoint (tool results as tool_result blocks, the system prompt as "
                        "the top-level `system`), or point this OpenAI-style client at an OpenAI-compatible /v1/chat/completions")
# the field the endpoint's API requires and the body lacks: the body is the other OpenAI API's
WRONG_BODY = {
    "messages": ("the request body is a Responses API body (`input`) or a completions body (`prompt`) sent to /chat/completions, "
                 "which reads `messages`",
                 "Set the client to the Chat Completions API for this endpoint (an 'OpenAI-compatible' provider), or send the Responses "
                 "body to the server's /v1/responses where it has one"),
    "prompt": ("the request body is a Chat Completions body (`messages`) sent to /completions, which reads `prompt`",
               "Send chat requests to /v1/chat/completions (the client's chat or 'OpenAI-compatible chat' mode), or send a `prompt` "
               "to /v1/completions"),
    "input": ("the request body is a Chat Completions body (`messages`) sent to /responses, which reads `input`",
              "Set the client to the Responses API only for an endpoint that serves /v1/responses; else use its Chat Completions mode"),
}
# the Anthropic API's refusals of a request that is not in its format: no anthropic-version header, no max_tokens
# (and its 404 envelope for a route it lacks, ANTHROPIC_ROUTE_MISS)
ANTHROPIC_ROUTE_MISS = re.compile(r"""['"]type['"]\s*:\s*['"]not_found_error['"]\s*,\s*['"]message['"]\s*:\s*['"]Not Found['"]""")
ANTHROPIC_FORMAT = re.compile(r"anthropic-version:? header is required|max_tokens: Field required|" + ANTHROPIC_ROUTE_MISS.pattern, re.I)
OPENAI_AT_MESSAGES = ("the client speaks the OpenAI API and the endpoint is the Anthropic Messages API (its own error says so: "
                      "no anthropic-version header, no max_tokens, or no such route)",
                      "Use the client's Anthropic provider for this endpoint (it sends x-api-key, anthropic-version and max_tokens), "
                      "or point this OpenAI-style client at an OpenAI-compatible base URL; a gateway in between must pass the headers on")
RESPONSES_ROUTE = re.compile(r"^(?:/v1)?/responses\b")
RESPONSES_UNSERVED = "the client calls the OpenAI Responses API (POST /v1/responses), which this server does not serve (404)"
RESPONSES_UNSERVED_FIX = ("Call client.chat.completions.create (the Chat Completions API) against this server, or set the tool to "
                          "its chat wire API (Codex: wire_api = \"chat\"; LangChain: use_responses_api=False); or serve the model "
                          "with an engine version that has /v1/responses")


def _responses_unserved(events: list[LogEvent], bare: list[LogEvent], wire_api: str) -> bool:
    """Every 404 is the Responses route's: it names /v1/responses, or names no path while the client calls that API."""
    asked = wire_api == "responses" or any(RESPONSES_ROUTE.search(_path(e)) for e in events)
    return asked and bool(events) and all(RESPONSES_ROUTE.search(_path(e)) or e in bare for e in events)


NO_MESSAGES_API = "the server has no Anthropic Messages API (/v1/messages), which Claude Code and the Anthropic SDK speak"
NO_MESSAGES_API_FIX = ("Point the client at a server that serves /v1/messages, or put a gateway that translates it in front "
                       "(a LiteLLM proxy does); OpenAI-API clients use this server's /v1/chat/completions")


def _speaks_anthropic(e: LogEvent) -> bool:
    """A 404 with no path, printed by an Anthropic-API client (its error class, Claude Code's "API Error")."""
    return _is_404(e) and not e.values.get("path") and bool(ANTHROPIC_CLIENT.search(" ".join(e.lines)))


def _anthropic_404(e: LogEvent, base_url: str) -> str:
    """Which of the two an Anthropic client's 404 is: its base URL carries the /v1 the client adds itself,
    or the server has no /v1/messages at all."""
    path = urlsplit(base_url).path.rstrip("/") if base_url else ""
    return "access.base_url_invalid" if path.endswith("/v1") or "/v1/" in path else "access.protocol_mismatch"


def _anthropic_root(base_url: str) -> str:
    parts = urlsplit(base_url)
    path = re.sub(r"/v1(?:/.*)?$", "", parts.path.rstrip("/"))
    return f"{parts.scheme}://{parts.netloc}{path}"


# an endpoint path pasted into the base URL: the client appends its own path after it
ENDPOINT_SUFFIX = re.compile(r"/(?:v1/)?(?:chat/completions|completions|embeddings|models|responses|messages)/?$|"
                             r"/api/(?:generate|chat|embed(?:dings)?|tags)/?$")
NATIVE_PATH = re.compile(r"/api/(?:generate|chat|embed|tags|show|pull)\b")  # Ollama's own API: its clients want the bare root
LOOPBACK = re.compile(r"https?://(?:localhost|127\.\d+\.\d+\.\d+|\[::1\]|0\.0\.0\.0)[:/]")
URL = re.compile(r"https?://[^\s'\"`,)\]}]+")


# two API versions in a row in a requested path (/api/v1/v1/messages, /v4/v1/chat/completions, a JSON error body's
# "/ v4/v1/..."): the client appended its own version to a base URL that already ends in one
DOUBLED_VERSION = re.compile(r"/\s?(?P<base>v\d+(?:beta\d*)?)\s?/\s?(?P<added>v\d+(?:beta\d*)?)/")


def _doubled(e: LogEvent) -> tuple[str, str] | None:
    """(the base URL's version, the one the client added) when the 404's path repeats a version."""
    m = DOUBLED_VERSION.search(str(e.values.get("path") or "")) or DOUBLED_VERSION.search(" ".join(e.lines))
    return (m["base"], m["added"]) if m else None


# the endpoint's path twice in a row (/v1/chat/completions/chat/completions): a base URL that already ends in the endpoint
DOUBLED_ENDPOINT = re.compile(r"(?P<endpoint>/(?:chat/completions|completions|embeddings|responses|messages))/(?:v1/)?"
                              r"(?:chat/completions|completions|embeddings|responses|messages)\b")


def _doubled_endpoint(events: list[LogEvent]) -> str:
    """The endpoint path a 404's requested path repeats, or ""."""
    return next((m["endpoint"] for e in events if (m := DOUBLED_ENDPOINT.search(_path(e)))), "")


def _doubled_finding(base: str, added: str) -> tuple[str, list[Fix]]:
    title = f"the requested path repeats the API version (/{base}/{added}/): the base URL already ends in /{base} and the client appends /{added} itself"
    if base == added:
        return title, [Fix(f"Remove the trailing /{base} from the base URL: the client adds /{added}/... to it")]
    return title, [Fix(f"The API lives under /{base}, but the client appends its own /{added}: give a client (or setting) that takes "
                       f"the full base URL, ending in /{base}, without adding a version")]


# a line from or to Ollama: its request log (gin), or its default port (envconfig: OLLAMA_HOST 127.0.0.1:11434)
OLLAMA = re.compile(r"\[GIN\]|:11434\b")
OLLAMA_API_ELSEWHERE = ("the client speaks Ollama's own API (/api/...), which this server does not serve",
                        "Connect the client to this server as an OpenAI-compatible API (base URL http://<host>:<port>/v1), not as Ollama")
# the routes where Ollama (server/routes.go) answers a model it does not have with 404 "model ... not found"
OLLAMA_MODEL_ROUTES = re.compile(r"^/api/(?:generate|chat|embed(?:dings)?|show)\b")
# Ollama serves the Anthropic Messages API from v0.14.0 (ollama.com/blog/claude, 2026-01-16): before, /v1/messages is 404
OLLAMA_MESSAGES = ("Ollama before v0.14.0 has no Anthropic Messages API: every POST /v1/messages is 404",
                   "Update Ollama to v0.14.0 or later (check with ollama -v; a container's image too), and set "
                   "ANTHROPIC_BASE_URL to its root, without /v1")


def _path(e: LogEvent) -> str:
    """The requested path: the event's own, else the path of the URL it quotes."""
    return str(e.values.get("path") or urlsplit(str(e.values.get("url") or "")).path)


def _is_404(e: LogEvent) -> bool:
    if e.kind in ("client_route_not_found", "client_not_found"):
        return True
    if e.kind == "http_response":
        return e.values.get("status") == 404
    # openai.NotFoundError without a model in the message: a 404 of the path as much as of the model
    return e.kind == "client_model_not_found" and not any(k in e.values for k in ("model",)) and "NotFoundError" in " ".join(e.lines)


def _unnamed_404(e: LogEvent) -> bool:
    """openai.NotFoundError that names no model ("{'detail': 'Not Found'}", "{'message': 'Not Found'}"): a server that had
    the route and not the model says which model, so this 404 is the path's, as weak as a bare status."""
    text = LITELLM_TRAILER.sub("", " ".join(e.lines))
    return e.kind == "client_model_not_found" and "model" not in e.values and "model" not in text.lower() and not ENTITY_404.search(text)


# what LiteLLM's router appends to every failure it relays (litellm/router.py: ". Received Model Group={model_group}\nAvailable
# Model Group Fallbacks={fallbacks}"): its words, not the server's, so they name no model the server lacks
LITELLM_TRAILER = re.compile(r"\b(?:Received Model Group|Available Model Group Fallbacks)=\S*", re.I)


# Google's NOT_FOUND names no model, but it is its API's answer for the resource the request named (a path it has no
# route for gets its front end's HTML 404 page instead); so is Azure OpenAI's DeploymentNotFound, for a deployment name
# (Azure's model ID) the resource does not have (its route-less 404 is "Resource not found": the base URL's)
# OpenRouter's "No endpoints found for x" / "... that support tool use" is its answer for the model ID the request named
ENTITY_404 = re.compile(r"Requested entity was not found|\bDeploymentNotFound\b|The API deployment for this resource does not exist|"
                        r"\bNo endpoints found\b", re.I)


def _pathless_404(e: LogEvent) -> bool:
    """A 404 answer a client printed with neither its path nor a body that names a model (openai-node's "404 status code
    (no body)"): the server has no such route, as weak as a bare status."""
    return e.kind == "http_response" and e.values.get("status") == 404 and not _path(e)


# a model ID that is no ID: a setting left empty, stringified by the client (JavaScript's undefined, Python's None), or the
# stand-in a client puts where no model was chosen: Continue's "AUTODETECT" (continuedev/continue `core/llm/llms/*`, config
# `model: "AUTODETECT"`: list the server's models and pick one), and the `model or "default"` / "auto" / "unknown" fallbacks
# agents and routers write for an unset model; a server that answers "model not found" to one was sent no model
NO_MODEL = {"", "none", "null", "undefined", "nil", "autodetect", "default", "auto", "unknown"}


def _corrected(url: str) -> str | None:
    """The base URL this client should use, or None when its path looks right."""
    parts = urlsplit(url.rstrip(".;:"))  # a URL quoted at the end of a sentence
    path = parts.path.rstrip("/")
    native = bool(NATIVE_PATH.search(path))
    fixed = re.sub(r"(?:/v1){2,}", "/v1", ENDPOINT_SUFFIX.sub("", path))
    if not native and not fixed.endswith("/v1"):
        fixed += "/v1"
    if fixed == path and not parts.query:
        return None
    return urlunsplit((parts.scheme, parts.netloc, fixed, "", ""))


def _request_base(events: list[LogEvent]) -> str | None:
    """`POST http://host:port/chat/completions` in a 404 line: the base the client really used."""
    for e in events:
        for line in e.lines:
            for url in URL.findall(line):
                if OPENAI_PATHS.search("/" + url.split("/", 3)[-1]) if url.count("/") >= 3 else False:
                    return url.split("/", 3)[0] + "//" + url.split("/", 3)[2]
    return None


# what a client gets from a base URL with the endpoint path in it, besides a failure no rule names: a body that is no API
# answer (the server's page for the doubled path) or a 404 read as the model's
WRONG_PATH_SYMPTOMS = {"access.response_invalid", "access.model_not_found"}


def _pasted_endpoint_failures(log: LogView, found: dict[str, list[LogEvent]]) -> list[LogEvent]:
    """The failures a base URL configured with the endpoint path in it explains (`baseURL: .../v1/chat/completions`,
    `openai.api_base = .../v1/embeddings`): every OpenAI-style client appends that path itself (openai-python's
    `_build_request`, LangChain, LibreChat), so it asks for `.../chat/completions/chat/completions`. Judged only where
    the log shows a client failure and nothing else it recognised is the cause: the wrong-path symptoms, or a failure
    no rule names (generic), with no engine failure of the load layer beside them."""
    base = log.logs.setup.base_url
    try:
        path = urlsplit(base).path if base else ""
    except ValueError:  # a '[host]' urlsplit refuses: not a URL a client could have used
        return []
    if not ENDPOINT_SUFFIX.search(path) or "access.base_url_invalid" in found or not set(found) <= WRONG_PATH_SYMPTOMS:
        return []
    run = log.run
    here = [e for e in log.logs.events if e.run == run]
    if any(e.fatal and e.kind not in log.declared and e.kind not in GENERIC for e in here):
        return []  # an engine's own failure in the same log: access.client_log is not its judge
    return [e for evs in found.values() for e in evs] or [e for e in here if e.kind in GENERIC]


def _base_url_fix(base_url: str, not_found: list[LogEvent]) -> str | None:
    """A corrected base URL when a 404 came back and the configured (or used) one is wrong."""
    if base_url:
        return _corrected(base_url)
    if any(e.kind == "client_route_not_found" for e in not_found):
        return _corrected(_request_base(not_found) or "http://<host>:<port>")
    return None


def _base_url_fixes(base_url: str, events: list[LogEvent], default: str) -> list[Fix]:
    fixed = _corrected(base_url) if base_url else None
    if fixed is None:
        used = _request_base(events)
        fixed = _corrected(used) if used else None
    if fixed is None or "<host>" in fixed:
        return [Fix(default)]
    return [Fix(f"Point the client at the API root the server serves ({fixed}); the client appends /chat/completions itself",
                f"OPENAI_BASE_URL={fixed}")]


def _base_url_evidence(base_url: str) -> list[str]:
    if not base_url:
        return []
    fixed = _corrected(base_url)
    return [f"configured base URL {base_url}" + (f": the server serves its API under {fixed}" if fixed else "")]


# the variable a client reads its key from, as its own message names it ("... setting the OPENAI_API_KEY
# environment variable"); else the SDK's documented one, known from the template's source repository
# (a name of several words too: AZURE_OPENAI_API_KEY, whose last words alone are another SDK's variable)
KEY_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9_]*_(?:API_KEY|AUTH_TOKEN)\b")
SDK_KEY_VARIABLE = {"anthropic-sdk": "ANTHROPIC_API_KEY", "openai-": "OPENAI_API_KEY", "llama_index": "OPENAI_API_KEY"}


def _key_variable(events: list[LogEvent]) -> str | None:
    for e in events:
        for line in e.lines:
            if m := KEY_VARIABLE.search(line):
                return m.group()
    for e in events:
        source = str(e.values.get("template_source", ""))
        for repo, var in SDK_KEY_VARIABLE.items():
            if f"/{repo}" in source:
                return var
    return None


# no key reached the server: an empty one in the header (h11 `Illegal header value b'Bearer '`, the key an empty
# string or an unset CI secret), or the 401 a server answers a request without one (OpenAI API "You didn't provide an
# API key", OpenRouter "No auth credentials found" / "Missing Authentication header", LiteLLM "No api key passed in")
KEY_ABSENT = re.compile(r"\bBearer\s*(?:['\"\u2018\u2019\u201c\u201d]|\\[rn])?\s*(?:['\"\u2019\u201d]|$)(?![\w-])|didn['\u2019]?t provide an API key|"
                        r"No auth credentials found|Missing Authentication header|No api key passed in|未提供令牌|No API key (?:was )?(?:provided|found|passed)|"
                        r"\b(?:API[ _-]?key|Authorization header|x-api-key header)\W{0,3}(?:is |was )?(?:missing|required|empty|not (?:set|provided|found))\b|"
                        r"\bmissing (?:the )?(?:API[ _-]?key|Authorization header|x-api-key header|bearer token)\b", re.I)
EMPTY_MODEL = re.compile(r"\bmodel\s?(?:``|''|\"\"|\\\"\\\")(?!\w)|\bmodel=(?=\s|$|[,;])", re.I)
MODEL_REFUSED = re.compile(r"[\"']code[\"']\s*:\s*[\"']model_not_found\b|\bdoes not have access to model\b", re.I)
# a key that was sent and refused, in words KEY_ABSENT would read as "not found": the Gemini API's "API Key not found.
# Please pass a valid API key." (reason API_KEY_INVALID)
KEY_REFUSED = re.compile(r"Please pass a valid API key|API_KEY_INVALID", re.I)
# a gateway that gave up waiting for the upstream: 504 Gateway Timeout (nginx, Envoy, HAProxy "The server didn't respond
# in time.", the Vercel AI SDK's statusText), Cloudflare's 524 "A timeout occurred"; whatever a client wraps it in
# (openai InternalServerError, LiteLLM's), the request was accepted and no answer came within a deadline: access.timeout
GATEWAY_TIMEOUT = re.compile(r"\b(?:Error code|status(?: code)?|HTTP(?:/[\d.]+)?|code)\W{0,3}(?:504|524)\b|\b(?:504|524) status code\b|\b(?:504|524)\b\W{0,3}(?:Gateway|A timeout|Timeout)|"
                             r"Gateway Time-?out|Gateway timed out|\bA timeout occurred\b|didn't respond in time|\btimed out\b", re.I)
SERVER_SIDE = ("access.server_error", "access.response_invalid")
# an error body quoted as the message of a relay's own error object (the JSON escaped or not inside the string): the upstream
# API's answer, whose type is its verdict. Its invalid_request_error (the Anthropic and OpenAI APIs' 400: a parameter, a
# value or a shape the API refuses) is the request refused, whatever status the relay answered with (a 429, a 500)
RELAYED_REFUSAL = re.compile(r"""['"]message['"]\s*:\s*['"]\s*\{[^{}]{0,60}?(?:\{[^{}]{0,400}?)?\\?["']type\\?["']\s*:\s*\\?["']"""
                             r"""invalid_request_error\\?["']""")
RELAY_STATUS = ("access.rate_limited", "access.server_error", "access.timeout")


def _code(e: LogEvent) -> str | None:
    code = _cause(e)
    text = " ".join(e.lines)
    # LiteLLM's "You passed model=undefined/undefined", a "model 'default' not found": the model setting was empty or a
    # stand-in, not a name the server lacks
    if code == "access.model_not_found" and "model" in e.values and all(
            part.strip("'\"` .,").lower() in NO_MODEL for part in str(e.values["model"]).split("/")):
        return "access.model_id_missing"
    # a model-not-found message formatted with an empty name (model "", model=, The model ``): no model was sent
    if code == "access.model_not_found" and EMPTY_MODEL.search(text):
        return "access.model_id_missing"
    if code in ("access.key_rejected", "access.key_malformed") and (echoed := key_echo_code(text)):
        return echoed  # the key the provider echoes back says which of the three it was
    if code in ("access.key_rejected", "access.key_malformed") and KEY_ABSENT.search(text) and not KEY_REFUSED.search(text):
        return "access.key_missing"
    # a 403 whose body says the key may not use that model (the OpenAI API's PermissionDeniedError "Project `proj_x` does not
    # have access to model `gpt-4o`", code model_not_found): the model ID is the one to change, the key is fine
    if code == "access.key_rejected" and MODEL_REFUSED.search(text):
        return "access.model_not_found"
    # a 401/403 whose body speaks of the balance (xAI's 403 "used all available credits", one-api's quota refusals)
    if code == "access.key_rejected" and QUOTA.search(text):
        return "access.quota_exceeded"
    # a 429 (or a wrapper's RateLimitError) whose body speaks of the balance or quota: the account, not the rate
    if code == "access.rate_limited" and QUOTA.search(text):
        return "access.quota_exceeded"
    if code in RELAY_STATUS and RELAYED_REFUSAL.search(text):
        return None  # the upstream refused the request itself; the relay's status says nothing of rate, server or time
    if code in SERVER_SIDE and (e.values.get("status") in (504, 524) or GATEWAY_TIMEOUT.search(text)):
        return "access.timeout"
    if code in PROXY_LEG and PROXY_WRAP.search(text):
        return "access.proxy_failed"
    if code == "access.connect_failed" and WRAPPED_TIMEOUT.search(text) and not CONNECT_WORDS.search(text):
        return "access.timeout"
    return code


# urllib3's ProxyError around the error of the connection to the proxy (connectionpool.py: `ProxyError("Cannot connect to
# proxy.", e)` in 1.26, `ProxyError("Unable to connect to proxy", e)` in 1.26/2.x): the proxy's host did not resolve, its
# TLS failed (an https:// proxy URL for a plain-HTTP proxy: SSLEOFError, WRONG_VERSION_NUMBER) or it refused; the server
# itself was never asked. Through a SOCKS proxy (urllib3/contrib/socks.py) the connection is a SOCKSHTTPSConnection of a
# SOCKSHTTPSConnectionPool, and its NewConnectionError("Failed to establish a new connection: ...") is the proxy's
PROXY_WRAP = re.compile(r"\bProxyError\W{1,4}(?:Cannot connect to proxy|Unable to connect to proxy)|\bSOCKSHTTPS?Connection(?:Pool)?\b", re.I)
PROXY_LEG = ("access.dns_failed", "access.tls_failed", "access.connect_failed")
# a JSON parser's error on the body of a 404 that is no API's JSON: a web framework's route miss (Go net/http's
# "404 page not found", which encoding/json reads as the number 404 and then 'p'), so the path is wrong, not the answer
ROUTE_404_BODY = re.compile(r"\b404 page not found\b|invalid character 'p' after top-level value|"
                            r"\bstatus(?: code)?\W{0,3}404\b|\bError code: 404\b|\bHTTP(?:/[\d.]+)? 404\b|"
                            # a 404 whose body is a web page: the site's front end answered a path its API does not have
                            r"\b404\b\W{1,4}(?:Not Found\W{1,4})?<(?:!DOCTYPE|html)\b", re.I)
# the methods of an API call that carries a request body: a 404 to one is a client calling a route the server does not have
# (a browser's GET / or /favicon.ico in the same access log is no API call)
SENT_BODY = ("POST", "PUT", "PATCH")
# what a browser asks a server for on its own: LM Studio logs "Unexpected endpoint or method. (GET /favicon.ico)" too
NOT_API = re.compile(r"^/(?:favicon\.ico|robots\.txt)\b")


def _browser(e: LogEvent) -> bool:
    """A browser's CORS preflight or its favicon, which a server logs with an API call's words: no API call went astray."""
    return str(e.values.get("method")).upper() == "OPTIONS" or bool(NOT_API.search(_path(e)))


def _unrouted(e: LogEvent) -> bool:
    """An API call answered 404 at a path that is none of the routes whose 404 says more (the OpenAI routes with or without
    /v1, another API's, a doubled endpoint: _cause reads them first)."""
    path = _path(e)
    known = OPENAI_PATHS, GENERATION_PATHS, OTHER_PROTOCOL, DOUBLED_ENDPOINT
    return (e.kind == "http_response" and e.values.get("status") == 404 and not any(p.search(path) for p in known)
            and (str(e.values.get("method")) in SENT_BODY or bool(NATIVE_ROUTES.search(path))))


def _cause(e: LogEvent) -> str | None:
    if e.kind == "client_auth" and any(KEY_SHAPE.search(line) for line in e.lines):
        return "access.key_malformed"
    if e.kind == "client_bad_response":
        text = " ".join(e.lines)
        if ROUTE_404_BODY.search(text):  # the body the parser choked on is a 404's route miss: the path is wrong
            return "access.base_url_invalid"
        if re.search(r"502|503|504", text) and re.search(r"<!DOCTYPE|<html|res\.text=''|text=''", text, re.I):
            return "access.proxy_failed"
        if FIVE_XX.search(text):  # "503 Service Unavailable" as a client quotes the answer: the status is the failure
            return "access.server_error"
        return "access.response_invalid"
    if e.kind == "http_response":
        status = e.values.get("status")
        path = _path(e)
        if status in (401, 403):
            return "access.key_rejected"
        if status == 407:  # Proxy Authentication Required (RFC 9110 15.5.8): a proxy answered, not the server
            return "access.proxy_failed"
        if status == 422 and MODEL_PATHS.search(path):  # the request body failed the schema: most often the model field
            return "access.model_id_missing"
        if status == 404 and DOUBLED_ENDPOINT.search(path):
            return "access.base_url_invalid"  # the endpoint twice: the base URL, whatever API the path names
        if status == 404 and OLLAMA_MODEL_ROUTES.search(path) and OLLAMA.search(" ".join(e.lines)):
            return "access.model_not_found"  # Ollama serves these routes: its 404 there is "model not found, try pulling it"
        if status == 404 and OTHER_PROTOCOL.search(path):
            return "access.protocol_mismatch"
        if status == 404 and OPENAI_PATHS.search(path):
            return "access.base_url_invalid"
        if status == 404 and GENERATION_PATHS.search(path):
            return "access.model_not_found"
        if _unrouted(e):
            return "access.base_url_invalid"  # an API call to a route this server does not have: the client's URL is wrong
        if status == 429:
            return "access.rate_limited"
        if status == 402:  # Payment Required: the account's credit, not its rate
            return "access.quota_exceeded"
        if status in (502, 504) and LOOPBACK.search(" ".join(e.lines)):
            return "access.proxy_failed"  # nothing sits between a client and localhost but a proxy from the env
        if isinstance(status, int) and status >= 500:
            return "access.server_error"
        return None
    if e.kind == "client_route_not_found":
        path = str(e.values.get("path") or "")
        if _browser(e):
            return None
        return "access.protocol_mismatch" if OTHER_PROTOCOL.search(path) else "access.base_url_invalid"
    return KIND_CODE.get(e.kind)
