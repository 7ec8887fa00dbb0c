"""The endpoint probe: a transcript of what a client meets on the way to the model.

In the order a request meets them: the proxy chosen from the environment, DNS, TCP, TLS, then
HTTP: `GET /models`, a minimal chat request (`max_tokens` 16), the same request streamed, and
the other protocol's route when this one's is missing. When the configured path answers 404 the
probe tries the paths gateways really live under and records which one answered.

Safety rules that make it fit to run against production:
- redirects are never followed, so the key never reaches another host;
- every request has a timeout capped by the run's deadline, and bodies are read in chunks up to
  MAX_BODY (an endless body can neither hang the probe nor grow its memory);
- after a timeout nothing more is sent (a hung server would otherwise cost one timeout per step);
- everything stored is redacted; the key is sent only in headers.
"""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import urlsplit

from llm_doctor.collect import net, safe_http
from llm_doctor.facts.access import EndpointFacts, ProbeStep
from llm_doctor.redact import Redactor
from llm_doctor.settings import Settings, clean_key

MAX_BODY = 256 * 1024
MAX_STREAM = 64 * 1024 * 1024  # an event stream is read to its end or the time limit, but not forever
EXCERPT = 2000
MAX_EVENTS = 200
KEEP_HEADERS = (
    "content-type", "content-length", "transfer-encoding", "retry-after", "location", "server", "via",
    "www-authenticate", "proxy-authenticate", "x-cache", "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", "x-accel-buffering",
)  # fmt: skip
ENDPOINT_SUFFIXES = ("/chat/completions", "/completions", "/messages", "/models", "/embeddings", "/responses")
API_PREFIXES = ("/compatible-mode/v1", "/v1beta/openai", "/api/paas/v4", "/openai/v1", "/api/v1", "/v1", "/api")
OPENAI_CANDIDATES = ("/v1", "", "/compatible-mode/v1", "/v1beta/openai", "/api/paas/v4", "/openai/v1", "/api/v1", "/api")
ANTHROPIC_CANDIDATES = ("", "/anthropic", "/api/anthropic", "/apps/anthropic")
PROMPT = [{"role": "user", "content": "Reply with the word OK."}]
ANTHROPIC_VERSION = "2023-06-01"


def probe(settings: Settings, opts: Any, deadline: Any, say: Any) -> EndpointFacts | None:
    """The transcript; None when no base URL is configured anywhere and other layers were asked
    for too (a `run --log engine.log` on a GPU box has no endpoint to judge; `--only access` does)."""
    if not (settings.base_url.value or "").strip() and tuple(opts.layers) != ("access",):
        return None
    return Prober(settings, opts, deadline, say).run()


def split_base(url: str) -> tuple[str, str, str]:
    """(origin, path without query/fragment or trailing slash, error) of a base URL."""
    text = url.strip()
    if not text:
        return "", "", "it is empty"
    if any(c.isspace() for c in text):
        return "", "", "it contains whitespace"
    try:
        parts = urlsplit(text)
    except ValueError:  # urlsplit refuses an unclosed '[' and a bracketed host that is not IPv6
        return "", "", _bracket_error(text)
    if parts.scheme not in ("http", "https"):
        return "", "", "it has no http:// or https:// scheme"
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:  # ':0' parses, but nothing listens there and clients refuse it
        return "", "", "its port is not a number in 1-65535"
    if not parts.hostname:
        return "", "", "it has no host"
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    origin = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
    return origin, parts.path.rstrip("/"), ""


def _bracket_error(url: str) -> str:
    """What is wrong with the '[host]' that made urlsplit raise."""
    netloc = url.split("://", 1)[-1].split("/", 1)[0]
    if "]" not in netloc:
        return "its host opens '[' without a closing ']' (IPv6 is written http://[::1]:8000)"
    host = netloc[netloc.find("[") : netloc.find("]") + 1]
    return f"its host {host} is not an IPv6 address (only IPv6 is written in [ ])"


def api_root(path: str) -> str:
    """The path with pasted endpoint suffixes and API prefixes removed: where candidates hang."""
    changed = True
    while changed:
        changed = False
        for suffix in ENDPOINT_SUFFIXES + API_PREFIXES:
            if path.endswith(suffix):
                path, changed = path[: -len(suffix)].rstrip("/"), True
    return path


class Prober:
    def __init__(self, settings: Settings, opts: Any, deadline: Any, say: Any) -> None:
        self.settings = settings
        self.opts = opts
        self.deadline = deadline
        self.say = say or (lambda layer, msg: None)
        raw = settings.api_key.value
        self.key = clean_key(raw) if raw else ""
        self.redact = Redactor([raw, self.key]).text
        self.facts = EndpointFacts(
            base_url=self.redact(settings.base_url.value or ""),
            protocol=settings.protocol.value or "openai",
            key_sent="" if not raw else "as-is" if self.key == raw else "cleaned",
            insecure=bool(opts.insecure),
        )
        self.client: Any = None
        self.verify: Any = None
        self.stopped = False

    # -- plumbing ---------------------------------------------------------------------------
    def add(self, step: ProbeStep) -> ProbeStep:
        step.target = self.redact(step.target)
        step.error = self.redact(step.error)
        self.facts.steps.append(step)
        return step

    def left(self) -> float:
        """Time the probe may still use: the collectors' deadline, which already keeps a reserve of
        the run's for the checks and the report (Deadline.reserving), so a hung server costs the
        probe its time, never the diagnosis."""
        return self.deadline.remaining()

    def timeout(self) -> float:
        return max(0.05, min(float(self.opts.timeout), self.left()))

    def run(self) -> EndpointFacts:
        url = self.settings.base_url.value
        if not url:
            self.facts.url_error = "no base URL in flags, environment or client config files"
            return self.facts
        origin, path, error = split_base(url)
        if error:
            self.facts.url_error = error
            return self.facts
        try:
            self.verify = net.ssl_context(self.ca_bundle(), bool(self.opts.insecure))
        except (OSError, ValueError) as exc:  # an unreadable --ca-bundle / SSL_CERT_FILE
            source = "flag --ca-bundle" if self.opts.ca_bundle else self.settings.ca_bundle.source
            self.add(ProbeStep("tls", self.ca_bundle() or "", error_class=type(exc).__name__,
                               error=f"CA bundle {self.ca_bundle()} (from {source}) cannot be used: {exc}",
                               detail={"reason": "CA bundle unreadable"}))  # fmt: skip
            self.facts.stopped = "CA bundle unreadable"
            return self.facts
        try:
            if self.network(origin):
                self.http(origin, path)
        except Exception as exc:  # keep the transcript so far; the collector note says what broke
            self.facts.stopped = self.redact(f"the probe failed: {type(exc).__name__}: {exc}")
        finally:
            if self.client is not None:
                self.client.close()
        return self.facts

    # -- network: proxy, DNS, TCP, TLS --------------------------------------------------------
    def network(self, origin: str) -> bool:
        parts = urlsplit(origin)
        scheme, host = parts.scheme, parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        var, proxy, bypass = net.proxy_for(scheme, host, port, self.settings.proxy_env)
        if var or bypass:
            step = self.add(ProbeStep("proxy", self.redact(proxy) or "direct", ok=True, detail={"var": var, "bypass": bypass}))
        if not bypass:
            self.unused_proxies(var, proxy)
        if var:
            self.facts.proxy_url, self.facts.proxy_var = self.redact(proxy), var
            pparts = urlsplit(proxy if "://" in proxy else "//" + proxy)
            pscheme = pparts.scheme or "http"
            if pscheme not in ("http", "https", "socks5", "socks5h") or not pparts.hostname:
                step.ok, step.error_class = False, "InvalidProxyURL"
                step.error = f"{var}={self.redact(proxy)} is not a proxy URL (expected http://host:port)"
                return False
            if pscheme.startswith("socks"):
                try:
                    import socksio  # noqa: F401
                except ImportError:
                    step.ok, step.error_class = False, "MissingDependency"
                    step.error = f"{var} names a SOCKS proxy; httpx needs the socksio package (pip install 'httpx[socks]')"
                    return False
            try:
                pport = pparts.port or (443 if pscheme == "https" else 1080 if pscheme.startswith("socks") else 80)
            except ValueError:
                step.ok, step.error_class, step.error = False, "InvalidProxyURL", f"{var} has an invalid port"
                return False
            return self.reach(pparts.hostname, pport, via_proxy=True)
        if not self.reach(host, port, via_proxy=False):
            return False
        if scheme == "https":
            addr = self.facts.resolved[0]
            ctx = self.verify if not self.opts.insecure else net.ssl_context(self.ca_bundle(), insecure=False)
            step = self.add(net.tls_handshake(addr, host, port, ctx, self.timeout()))
            if not step.ok and self.opts.insecure and step.error_class == "SSLCertVerificationError":
                step.detail["ignored_by_insecure"] = True
            elif not step.ok:
                self.facts.stopped = "TLS handshake failed"
                return False
        return True

    def unused_proxies(self, used_var: str, used: str) -> None:
        """Proxy variables this URL's scheme does not use: a dead one still breaks every https
        (or http) client on the machine, so its reachability is recorded as `proxy_unused`."""
        seen = {used}
        for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
            value = (self.settings.proxy_env.get(var) or "").strip()
            if not value or var == used_var or value in seen:
                continue
            seen.add(value)
            parts = urlsplit(value if "://" in value else "//" + value)
            try:
                host, port = parts.hostname, parts.port or 80
            except ValueError:
                continue
            if not host or not (parts.scheme or "http").startswith("http"):
                continue
            limit = min(self.timeout(), 2.0)
            dns, addrs = net.resolve(host, port, limit)
            step = net.connect(addrs, port, limit, f"{host}:{port}") if dns.ok else dns
            self.add(ProbeStep("proxy_unused", self.redact(value), ok=step.ok, error_class=step.error_class,
                               error=step.error, detail={"var": var}))  # fmt: skip

    def reach(self, host: str, port: int, via_proxy: bool) -> bool:
        self.say("access", f"resolving {host}")
        dns, addrs = net.resolve(host, port, self.timeout())
        dns.detail["via_proxy"] = via_proxy
        self.add(dns)
        if not dns.ok:
            self.facts.stopped = "DNS lookup failed"
            return False
        self.facts.resolved = addrs
        self.say("access", f"connecting to {host}:{port}")
        tcp = net.connect(addrs, port, self.timeout(), f"{host}:{port}")
        tcp.detail["via_proxy"] = via_proxy
        self.add(tcp)
        if not tcp.ok:
            self.facts.stopped = "TCP connect failed"
        return tcp.ok

    def ca_bundle(self) -> str | None:
        return self.opts.ca_bundle or self.settings.ca_bundle.value

    # -- HTTP ---------------------------------------------------------------------------------
    def http(self, origin: str, path: str) -> None:
        self.client = safe_http.client(
            verify=self.verify,
            proxy=self.settings.proxy_env.get(self.facts.proxy_var) if self.facts.proxy_var else None,
            trust_env=False,
        )
        if self.facts.protocol == "anthropic":
            self.anthropic(origin, path)
        else:
            self.openai(origin, path)

    def openai(self, origin: str, path: str) -> None:
        base = origin + path
        root = origin + api_root(path)
        models = self.get_models("models", base)
        working = base if models is not None and models.ok else ""
        if models is not None and (route_missing(models) or models.detail.get("web_page")):
            working = self.first(
                lambda cand: self.get_models("candidate_models", cand), candidates(root, OPENAI_CANDIDATES, base), listed
            )
        raw = (self.settings.base_url.value or "").strip().split("?")[0]
        if raw.endswith("/") and models is not None and models.ok:
            self.request("slash", "GET", base + "//models", headers=self.auth_headers(False))
        model = (self.settings.model.value or "").strip()
        if not model:
            self.facts.working_base_url = self.redact(working)
            return
        chat_base = working or base
        chat = self.chat("chat", chat_base, model)
        if chat is not None and (route_missing(chat) or chat.detail.get("web_page")):
            tried = candidates(root, OPENAI_CANDIDATES, chat_base)
            working = self.first(lambda cand: self.chat("candidate_chat", cand, model), tried, answered)
            if not working:
                self.facts.working_base_url = ""
                self.messages("sniff_messages", root, model)
                return
            chat_base = working
        elif chat is not None and chat.status is not None:
            working = chat_base
            if chat.status >= 400 and chat.detail.get("error_shape") == "anthropic":
                self.messages("sniff_messages", root, model)  # an Anthropic server refusing OpenAI's shape
        self.facts.working_base_url = self.redact(working)
        last = self.last_http()
        if last is not None and last.status == 200 and last.detail.get("choices"):
            self.chat("stream", chat_base, model, stream=True)

    def anthropic(self, origin: str, path: str) -> None:
        base = origin + path
        root = origin + api_root(path)
        self.get_models("models", base + "/v1")
        model = (self.settings.model.value or "").strip()
        if not model:
            return
        msg = self.messages("messages", base, model)
        working = base if msg is not None and msg.status is not None and not route_missing(msg) else ""
        if msg is not None and route_missing(msg):
            tried = candidates(root, ANTHROPIC_CANDIDATES, base)
            working = self.first(lambda cand: self.messages("candidate_messages", cand, model), tried, answered)
            if not working:
                self.get_models("sniff_models", root + "/v1")
                self.chat("sniff_chat", root + "/v1", model)
                return
        self.facts.working_base_url = self.redact(working)
        last = self.last_http()
        if last is not None and last.status == 200 and last.detail.get("content_blocks") is not None:
            self.messages("messages_stream", working, model, stream=True)

    def first(self, attempt: Any, bases: list[str], accept: Any) -> str:
        """The first candidate base whose answer `accept`s, or "" (also when the probe stopped)."""
        for cand in bases:
            step = attempt(cand)
            if step is None:
                return ""
            if accept(step):
                return cand
        return ""

    def last_http(self) -> ProbeStep | None:
        return next((s for s in reversed(self.facts.steps) if s.step not in ("proxy", "dns", "tcp", "tls")), None)

    def auth_headers(self, anthropic: bool) -> dict[str, str]:
        headers = {"user-agent": "llm-doctor/0.1"}
        if self.key:  # both styles, to the configured host only: an Anthropic route answers either
            headers["authorization"] = f"Bearer {self.key}"
            headers["x-api-key"] = self.key
        if anthropic:
            headers["anthropic-version"] = ANTHROPIC_VERSION
        return headers

    def get_models(self, name: str, base: str) -> ProbeStep | None:
        step = self.request(name, "GET", base + "/models", headers=self.auth_headers(self.facts.protocol == "anthropic"))
        if step is not None and step.detail.get("model_ids") is not None and self.facts.served_models is None:
            if name in ("models", "candidate_models"):
                self.facts.served_models = list(step.detail["model_ids"])
        if step is not None:
            step.ok = step.status == 200 and step.detail.get("model_ids") is not None
        return step

    def chat(self, name: str, base: str, model: str, stream: bool = False) -> ProbeStep | None:
        body: dict[str, Any] = {"model": model, "messages": PROMPT, "max_tokens": 16}
        if stream:
            body["stream"] = True
        step = self.request(name, "POST", base + "/chat/completions", json_body=body, headers=self.auth_headers(False), sse=stream)
        if step is not None and step.status == 400 and "max_completion_tokens" in str(step.detail.get("error_message", "")):
            body["max_completion_tokens"] = body.pop("max_tokens")
            step.detail["retried"] = "max_completion_tokens"
            step = self.request(name, "POST", base + "/chat/completions", json_body=body, headers=self.auth_headers(False), sse=stream)
        return step

    def messages(self, name: str, base: str, model: str, stream: bool = False) -> ProbeStep | None:
        body: dict[str, Any] = {"model": model, "max_tokens": 16, "messages": PROMPT}
        if stream:
            body["stream"] = True
        return self.request(name, "POST", base + "/v1/messages", json_body=body, headers=self.auth_headers(True), sse=stream)

    def request(
        self, name: str, method: str, url: str, json_body: Any = None, headers: dict[str, str] | None = None, sse: bool = False
    ) -> ProbeStep | None:
        """One HTTP exchange, recorded; None when the probe has stopped (timeout or deadline)."""
        import httpx

        if self.stopped:
            return None
        if self.left() <= 0.05:
            self.stopped, self.facts.stopped = True, "the run's deadline was reached"
            return None
        self.say("access", f"{method} {self.redact(url)}")
        limit = self.timeout()
        step = self.add(ProbeStep(name, f"{method} {url}"))
        step.detail["timeout_s"] = round(limit, 3)
        start = time.perf_counter()
        reader = SSEReader() if sse else None
        body = bytearray()
        with safe_http.Watchdog(limit) as dog:
            try:
                with self.client.stream(method, url, json=json_body, headers=headers, timeout=httpx.Timeout(limit),
                                        extensions=dog.extensions) as resp:  # fmt: skip
                    step.status = resp.status_code
                    step.headers = {k: self.redact(v) for k, v in resp.headers.items() if k.lower() in KEEP_HEADERS}
                    step.content_type = resp.headers.get("content-type", "")
                    step.detail["first_byte_ms"] = round((time.perf_counter() - start) * 1000, 2)
                    inflater = safe_http.Inflater(resp.headers.get("content-encoding", ""), MAX_BODY + 1 if reader is None else MAX_STREAM)
                    for raw in resp.iter_raw():
                        chunk = inflater.feed(raw)
                        now_ms = (time.perf_counter() - start) * 1000
                        if reader is not None:
                            reader.feed(chunk, now_ms)
                        if len(body) < MAX_BODY:
                            body += chunk[: MAX_BODY - len(body)]
                        if inflater.full:
                            step.detail["truncated"] = True
                            break
                        if now_ms / 1000 > limit:
                            step.detail["cut_after_s"] = round(limit, 3)
                            if reader is None:  # a plain answer still arriving at the limit: a slow server
                                raise safe_http.timed_out(dog, len(body))
                            break
                        if reader is not None and reader.done:
                            break
            except httpx.HTTPError as exc:
                failure: Exception = exc
                step.detail["phase"], step.detail["body_bytes"] = dog.phase, len(body)
                if dog.fired or isinstance(exc, safe_http.WallClockTimeout):  # a hung or trickling server
                    failure = safe_http.timed_out(dog, len(body))
                step.error_class, step.error = type(failure).__name__, str(failure) or type(failure).__name__
                if isinstance(failure, httpx.TimeoutException) and not (reader is not None and reader.events):
                    self.stopped, self.facts.stopped = True, f"{method} {self.redact(url)} timed out after {limit:g} s"
            except (httpx.InvalidURL, UnicodeError, ValueError, OSError) as exc:
                step.error_class, step.error = type(exc).__name__, str(exc) or type(exc).__name__
        step.duration_ms = round((time.perf_counter() - start) * 1000, 2)
        step.ok = step.status is not None and 200 <= step.status < 300 and not step.error_class
        text = bytes(body).decode("utf-8", errors="replace")
        step.body_excerpt = self.redact(text[:EXCERPT])
        step.error = self.redact(step.error)
        if reader is not None:
            step.detail.update(reader.summary())
        step.detail.update(read_body(text, step.content_type))
        if step.status == 200 and step.detail.get("html") and not sse and not self.facts.proxy_url:
            # a web page where the API's JSON was expected, nothing in between: a web UI's route (a single-page app answers
            # every path with its index.html) or a portal's; the API's usual paths are tried, in case the UI serves it there
            step.detail["web_page"] = True
        if isinstance(step.detail.get("error_message"), str):
            step.detail["error_message"] = self.redact(step.detail["error_message"])
        if step.status is not None and step.status in (301, 302, 303, 307, 308):
            self.stopped, self.facts.stopped = True, f"redirected to {step.headers.get('location', '?')}, not followed"
        if step.status is None and step.error_class in ("RemoteProtocolError", "ReadError"):
            self.raw_sniff(url)
        elif step.status == 400 and "plain http request was sent to https port" in text.lower():
            self.tls_sniff(url)
        return step

    def raw_sniff(self, url: str) -> None:
        """The HTTP client could not parse the answer: read the server's first bytes raw (no
        credentials sent) so the report can quote what came back; an http:// port that answered
        with TLS bytes or nothing at all gets the TLS sniff."""
        parts = urlsplit(url)
        self.stopped = True
        if not self.facts.resolved or not parts.hostname or self.facts.proxy_var:
            return
        https = parts.scheme == "https"
        ctx = net.ssl_context(None, insecure=True) if https else None
        port = parts.port or (443 if https else 80)
        raw = self.add(net.first_bytes(self.facts.resolved[0], parts.hostname, port, ctx, parts.path, self.timeout()))
        raw.detail["first_bytes"] = self.redact(str(raw.detail["first_bytes"]))
        if not https and (raw.detail["tls_like"] or not raw.detail["bytes"]):
            self.tls_sniff(url)

    def tls_sniff(self, url: str) -> None:
        """An http:// URL got a broken answer: does the port speak TLS instead?"""
        parts = urlsplit(url)
        if not self.facts.resolved or not parts.hostname:
            return
        ctx = net.ssl_context(None, insecure=True)
        self.add(net.tls_handshake(self.facts.resolved[0], parts.hostname, parts.port or 80, ctx, self.timeout(), "tls_sniff"))
        self.stopped = True


def candidates(root: str, paths: tuple[str, ...], tried: str) -> list[str]:
    return [root + p for p in paths if root + p != tried]


def listed(step: ProbeStep) -> bool:
    return step.ok


def answered(step: ProbeStep) -> bool:
    """The route exists: a JSON answer that is not 404/405 "no such route" and not a 5xx."""
    return step.status is not None and step.status < 500 and not route_missing(step) and bool(step.detail.get("json"))


def route_missing(step: ProbeStep) -> bool:
    """404/405 that says "no such route", not "no such model" (vLLM answers 404 for both); or a server's
    "no such route" under another status (LM Studio's 200, ROUTE_ERROR)."""
    if step.status not in (404, 405) and not step.detail.get("route_error"):
        return False
    return not step.detail.get("model_error")


# a server's answer for a route it does not serve, whatever status it came with: LM Studio answers every unknown path with
# 200 and `{"error":"Unexpected endpoint or method. (POST /chat/completions)"}` (closed source; lmstudio-bug-tracker#618)
ROUTE_ERROR = re.compile(r"^Unexpected endpoint or method\.")


def read_body(text: str, content_type: str) -> dict[str, Any]:
    """What the collector can read off a body without judging it: JSON or not, the server's error
    message, model IDs, `choices`, content lengths, an HTML page's title."""
    out: dict[str, Any] = {}
    stripped = text.lstrip()
    if "html" in content_type.lower() or stripped[:15].lower().startswith(("<!doctype", "<html")):
        out["html"] = True
        low = text.lower()
        i, j = low.find("<title>"), low.find("</title>")
        if 0 <= i < j:
            out["html_title"] = text[i + 7 : j].strip()[:200]
        return out
    try:
        data = safe_http.parse_json(text) if stripped[:1] in ("{", "[") else None
    except ValueError as exc:
        data = None
        out["json_error"] = str(exc)[:200]
    out["json"] = data is not None
    if not isinstance(data, dict):
        return out
    out["keys"] = sorted(str(k) for k in data)[:20]
    message, etype, code = error_of(data)
    if data.get("type") == "error" and isinstance(data.get("error"), dict):
        out["error_shape"] = "anthropic"
    if message:
        out["error_message"] = message[:500]
        out["error_type"] = etype
        out["error_code"] = code
        low = message.lower()
        if ROUTE_ERROR.search(message):
            out["route_error"] = True
        out["model_error"] = "model" in low and any(
            w in low for w in ("not exist", "not found", "does not", "invalid model", "unknown model", "no such model", "not served")
        )
        if etype == "not_found_error" and low.startswith("model") or code in ("model_not_found", "DeploymentNotFound"):
            out["model_error"] = True  # Anthropic `model: x`; OpenAI `code: model_not_found`; Azure's deployment (its model ID)
        if low.startswith("no endpoints found"):
            out["model_error"] = True  # OpenRouter: no provider serves that model ID (or not with what the request needs)
    ids = model_ids(data)
    if ids is not None:
        out["model_ids"] = ids[:500]
    choices = data.get("choices")
    if isinstance(choices, list):
        out["choices"] = len(choices)
        first = choices[0] if choices and isinstance(choices[0], dict) else {}
        msg = first.get("message") if isinstance(first.get("message"), dict) else {}
        content = msg.get("content")
        reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
        out["content_len"] = len(content) if isinstance(content, str) else 0
        out["reasoning_len"] = len(reasoning) if isinstance(reasoning, str) else 0
        out["finish_reason"] = first.get("finish_reason")
    blocks = data.get("content")
    if data.get("type") == "message" and isinstance(blocks, list):
        out["content_blocks"] = [b.get("type") for b in blocks if isinstance(b, dict)]
        out["stop_reason"] = data.get("stop_reason")
    return out


def error_of(data: dict[str, Any]) -> tuple[str, str, Any]:
    """The error message in the shapes servers use: OpenAI/LiteLLM `{"error": {...}}`, vLLM
    `{"object": "error", "message": ...}`, Anthropic `{"type": "error", "error": {...}}`, FastAPI
    `{"detail": ...}`, plain `{"error": "text"}`."""
    err = data.get("error")
    if isinstance(err, dict):
        return str(err.get("message") or ""), str(err.get("type") or ""), err.get("code")
    if isinstance(err, str) and err:
        return err, "", data.get("code")
    if data.get("object") == "error" and data.get("message"):
        return str(data["message"]), str(data.get("type") or ""), data.get("code")
    detail = data.get("detail")
    if isinstance(detail, str) and detail:
        return detail, "", None
    if isinstance(data.get("message"), str) and "choices" not in data and "data" not in data:
        return str(data["message"]), str(data.get("type") or ""), data.get("code")
    return "", "", None


def model_ids(data: dict[str, Any]) -> list[str] | None:
    """IDs from `{"data": [{"id": ...}]}` (OpenAI, vLLM, Anthropic, LiteLLM) or
    `{"models": [{"name"|"model"|"id": ...}]}` (Ollama, llama.cpp)."""
    for key, fields in (("data", ("id",)), ("models", ("id", "model", "name"))):
        items = data.get(key)
        if isinstance(items, list) and all(isinstance(i, dict) for i in items):
            ids = [str(next((i[f] for f in fields if i.get(f)), "")) for i in items]
            return [i for i in ids if i]
    return None


class SSEReader:
    """Server-sent events read incrementally: when each event arrived, in how many network reads
    they came, whether the stream ended with `data: [DONE]` (OpenAI) or `message_stop` (Anthropic)."""

    def __init__(self) -> None:
        self.buf = b""
        self.events = 0
        self.bad = 0
        self.done = False
        self.times: list[float] = []
        self.reads_with_events = 0
        self.names: list[str] = []

    def feed(self, chunk: bytes, at_ms: float) -> None:
        self.buf += chunk
        before = self.events
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            line = line.rstrip(b"\r")
            if line.startswith(b"event:"):
                name = line[6:].strip().decode("utf-8", "replace")
                if len(self.names) < 20 and name not in self.names:
                    self.names.append(name)
                if name == "message_stop":
                    self.done = True
            elif line.startswith(b"data:"):
                data = line[5:].strip()
                if data == b"[DONE]":
                    self.done = True
                    continue
                self.events += 1
                if len(self.times) < MAX_EVENTS:
                    self.times.append(round(at_ms, 2))
                try:
                    safe_http.parse_json(data.decode("utf-8", "replace"))
                except ValueError:
                    self.bad += 1
            if len(self.buf) > MAX_BODY:
                self.buf = b""
        if self.events > before:
            self.reads_with_events += 1

    def summary(self) -> dict[str, Any]:
        return {
            "sse_events": self.events,
            "sse_malformed": self.bad,
            "sse_done": self.done,
            "sse_event_ms": self.times,
            "sse_reads_with_events": self.reads_with_events,
            "sse_event_names": self.names,
        }
