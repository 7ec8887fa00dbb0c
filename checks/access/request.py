"""A minimal real request (`max_tokens` 16) and the shape of its answer.

200 is not enough: proxies and portals answer 200 with HTML, some gateways put an error object in
a 200, some omit `choices`. A reasoning model that spends the 16 tokens on `reasoning_content` and
returns empty `content` with `finish_reason: length` is healthy, and is said to be.
"""

from __future__ import annotations

import re

from llm_doctor.checks.access import transcript as t
from llm_doctor.checks.access.provider_words import QUOTA
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.access import EndpointFacts, ProbeStep
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

CODES = ("access.response_invalid", "access.rate_limited", "access.quota_exceeded", "access.server_error", "access.timeout")
# not after access.model: that one cannot judge a server that answers nothing but 5xx or times out
AFTER = ("access.network", "access.base_url", "access.key", "access.protocol")
# the providers' own quota words, and these as whole words: never inside a link (Azure's per-minute 429 points at
# aka.ms/oai/quotaincrease, which is a rate limit)
QUOTA_WORDS = re.compile(QUOTA.pattern + r"|\b(?:quota|billing|credits?|balance|payment)\b", re.I)
TIMEOUTS = ("ReadTimeout", "WriteTimeout", "PoolTimeout", "ConnectTimeout", "WallClockTimeout")


@check("access.request", "access", codes=CODES, needs=("endpoint",), after=AFTER)
def request(facts: Facts) -> Outcome:
    """A minimal chat request: status, timeout, and the shape of the answer."""
    ep = t.endpoint(facts)
    step = _main(ep)
    if step is None:
        raise NotApplicable("no request was sent (no model ID, or the probe stopped earlier)")
    if step.detail.get("model_error") or facts.settings is None or not (facts.settings.model.value or "").strip():
        if step.step != "models":
            raise NotApplicable("the model is not served or not set: access.model reports it")
    if step.error_class in TIMEOUTS:
        return Outcome([_timeout(ep, step)])
    if step.status is None or step.error_class:
        return Outcome([_broken_http(ep, step)])
    finding = _status(step) or _shape(ep, step)
    if isinstance(finding, Finding):
        return Outcome([finding])
    return Outcome([], finding or f"{step.target} -> {step.status}")


def _main(ep: EndpointFacts) -> ProbeStep | None:
    names = ("messages", "candidate_messages") if ep.protocol == "anthropic" else ("chat", "candidate_chat")
    steps = [s for s in ep.steps if s.step in names]
    if steps and steps[0].detail.get("web_page") and not any(t.answered(s) for s in steps):
        return steps[0]  # the configured base URL's page; the usual paths tried after it answered no better
    good = [s for s in steps if t.answered(s) or s.status is None or (s.status or 0) >= 500 or s.detail.get("html")]
    chosen = (good or steps)[-1:] or [s for s in t.http_steps(ep) if s.error_class or (s.status or 0) in (429, 402) or (s.status or 0) >= 500][:1]
    return chosen[0] if chosen else None


def _broken_http(ep: EndpointFacts, step: ProbeStep) -> Finding:
    """An exchange that failed below the API: not HTTP at all, a head too large to parse, a
    connection closed in the middle of the body. The raw first bytes are quoted when read."""
    raw = t.find(ep, "raw")
    seen = [f"the server's first bytes: {raw.detail.get('first_bytes')}"] if raw is not None and raw.detail.get("bytes") else []
    error = step.error.lower()
    if step.status is not None:
        title = f"the answer broke off: {step.status} and then {step.error_class}: {step.error}"
    elif "buffer too long" in error:
        title = "the answer's status line and headers are over 100 KiB: not a sane HTTP answer"
    elif raw is not None and raw.detail.get("bytes") and not str(raw.detail.get("first_bytes", "")).startswith("b'HTTP/"):
        title = "the server does not speak HTTP on this port"
    elif raw is not None and raw.ok and not raw.detail.get("bytes"):
        title = "the server closed the connection without answering"
    else:
        title = f"the answer is not valid HTTP: {step.error_class}: {step.error}"
    return Finding("access.response_invalid", title[:200], [t.line(step), *seen],
                   [Fix("Check what really listens on that port", f"curl -sv {step.target.split(' ', 1)[-1]}")])  # fmt: skip


def _timeout(ep: EndpointFacts, step: ProbeStep) -> Finding:
    limit = float(step.detail.get("timeout_s") or 0)
    phase = str(step.detail.get("phase") or "")
    if phase == "in the TLS handshake":
        title = f"the TLS handshake did not complete within {limit:g} s (a timeout, not a certificate problem)"
    elif phase == "reading the body":
        title = f"the server is too slow: after {limit:g} s only {step.detail.get('body_bytes', 0)} bytes of the body ({step.status}) had arrived"
    elif step.status is None and phase.startswith("waiting") and step.error_class == "WallClockTimeout":
        title = f"the server accepted the connection but its status line and headers were not complete within {limit:g} s"
    else:
        title = f"the server accepted the connection but sent no answer within {limit:g} s"
    return Finding(
        "access.timeout",
        title,
        [f"{step.target} -> {step.error_class} after {step.duration_ms / 1000:.1f} s (timeout {limit:g} s)"
         + (f": {step.error}" if step.error_class == "WallClockTimeout" else ""),
         f"TCP connect to {t.host_of(ep.base_url)} succeeded" if t.find(ep, "tcp") else "connected"],
        [Fix("Look at the server: still loading the model, hung, or requests queued (vLLM /metrics vllm:num_requests_waiting)"),
         Fix("If it is only slow, allow more time", f"--timeout {max(30, int(limit * 3))}")],
    )  # fmt: skip


def _status(step: ProbeStep) -> Finding | None:
    status = step.status or 0
    said = t.server_says(step)
    text = f"{said} {step.detail.get('error_type', '')} {step.detail.get('error_code', '')}".lower()
    if status == 402 or (status in (403, 429) and QUOTA_WORDS.search(text)):
        return Finding("access.quota_exceeded", f"the account's quota or credit is exhausted ({status})", [t.line(step)],
                       [Fix("Add credit or raise the quota of the account this key belongs to, or use another key")])  # fmt: skip
    if status == 429:
        retry = step.headers.get("retry-after", "")
        evidence = [t.line(step)] + ([f"Retry-After: {retry}"] if retry else [])
        evidence += [f"{k}: {v}" for k, v in sorted(step.headers.items()) if k.startswith("x-ratelimit-")]
        wait = f"wait {retry} s (Retry-After) and retry" if retry.isdigit() else "retry with exponential backoff"
        return Finding("access.rate_limited", "the server rate-limited the request (429)", evidence,
                       [Fix(f"Send fewer requests or tokens per minute; {wait}"),
                        Fix("On a gateway (LiteLLM), raise the key's rpm/tpm limit")])  # fmt: skip
    if status >= 500:
        server = step.headers.get("server", "")
        gateway = status in (502, 503, 504) and (step.detail.get("html") or server)
        fixes = [Fix("Read the engine's log around this request (its file, `docker logs` or `kubectl logs`): "
                     "`llm-doctor analyze` finds the exception in it, or pass it to `run` with --log, --docker or --k8s")]
        if gateway:
            fixes.insert(0, Fix(f"The gateway{' (' + server + ')' if server else ''} cannot reach the model server behind it: check that it is up and the upstream address"))
        if status == 503:
            fixes.insert(0, Fix("503: the server is loading or overloaded; retry after it reports ready (GET /health)"))
        evidence = [t.line(step)]
        cause = _engine_cause(said)
        if cause:  # a gateway's 503 quoting the engine's CUDA error: the engine's failure is the cause, not the gateway
            kind, tier = cause
            fixes.insert(0, Fix(f"The engine behind it failed ({kind}): diagnose the engine, its log holds the whole error "
                                "(`llm-doctor analyze` on that log, or `run` with --log, --docker or --k8s)"))
            evidence.append(f"the body names the engine's failure: {kind} (recognised by: {tier})")
            return Finding("access.server_error", f"the server answered {status} with the engine's error ({kind}): {said}"[:200], evidence, fixes)
        return Finding("access.server_error", f"the server answered {status}: {said}"[:200], evidence, fixes)
    return None


def _engine_cause(said: str) -> tuple[str, str] | None:
    """The engine failure a 5xx body states, read with the log grammar the way a log line is (the
    error inside its wrapper first): (event kind, how it was recognised), or None. An answer that
    only says that a request failed (a status, a page) names no cause."""
    from llm_doctor.logparse import chains

    found = chains.match(said) if said else None
    if found is None or not found[0].fatal or found[0].kind.startswith("client_") or found[0].kind == "http_response":
        return None
    rule, values = found
    return rule.kind, str(values.get("tier") or "template")


def _shape(ep: EndpointFacts, step: ProbeStep) -> Finding | str | None:
    d = step.detail
    base = ep.working_base_url or ep.base_url
    if d.get("html"):
        return Finding("access.response_invalid", "the answer is an HTML page, not API JSON: a proxy, login portal or web UI answered",
                       [t.line(step), f"Content-Type: {step.content_type or '?'}"],
                       [Fix("Point the base URL at the API itself, not a web page", f"curl -s {base}/models"),
                        Fix("If a corporate proxy intercepts it, bypass it", f"export NO_PROXY={t.host_of(base)}")])  # fmt: skip
    if not d.get("json"):
        parser = [f"JSON parser: {d['json_error']}"] if d.get("json_error") else []
        return Finding("access.response_invalid", "the answer is not JSON" + (": nested too deep to parse" if "too deep" in str(d.get("json_error")) else ""),
                       [t.line(step), f"Content-Type: {step.content_type or '?'}", *parser],
                       [Fix("Check what answers at the base URL", f"curl -si {base}/models")])  # fmt: skip
    if (step.status or 0) >= 400:
        return Finding("access.response_invalid", f"the server refused the minimal request ({step.status}): {t.server_says(step)}"[:200],
                       [t.line(step)], [Fix("Read the server's message: a parameter it does not accept, or a limit")])  # fmt: skip
    if ep.protocol == "anthropic":
        if d.get("content_blocks") is None:
            return Finding("access.response_invalid", "200, but not an Anthropic message (no `type: message` with `content`)",
                           [t.line(step)], [Fix("Use the base URL of an Anthropic-compatible endpoint")])  # fmt: skip
        return f"{step.target} -> 200 message, stop_reason {d.get('stop_reason')}"
    if d.get("error_message"):
        return Finding("access.response_invalid", f"200 with an error object inside: {d['error_message']}"[:200], [t.line(step)],
                       [Fix("The gateway reports an upstream error with status 200: read the message and the gateway's log")])  # fmt: skip
    if not d.get("choices"):
        keys = ", ".join(d.get("keys") or []) or "none"
        return Finding("access.response_invalid", "200, but the answer has no `choices`", [t.line(step), f"top-level keys: {keys}"],
                       [Fix("Something between client and model rewrites answers, or the path is not the chat API", f"curl -s {base}/models")])  # fmt: skip
    if not d.get("content_len") and d.get("reasoning_len") and d.get("finish_reason") == "length":
        return (f"healthy: a reasoning model spent max_tokens=16 on reasoning_content ({d['reasoning_len']} chars) "
                "and stopped with finish_reason=length before any content; that is expected, not a failure")  # fmt: skip
    return f"{step.target} -> 200 with {d.get('choices')} choice(s), finish_reason {d.get('finish_reason')}"
