"""Reading the endpoint probe transcript: shared by the access checks, judges nothing itself.

Evidence lines are built here so every access finding quotes a request the same way:
`POST http://h:8000/v1/chat/completions -> 404 The model `x` does not exist.`
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from llm_doctor.facts import Facts
from llm_doctor.facts.access import EndpointFacts, ProbeStep, Setting

NETWORK_STEPS = ("proxy", "proxy_unused", "dns", "tcp", "tls", "tls_sniff", "raw")
SNIFF_STEPS = ("sniff_messages", "sniff_chat", "sniff_models")
LOCAL_SUFFIXES = (".local", ".internal", ".localdomain", ".svc", ".cluster.local", ".lan", ".home.arpa")


def endpoint(facts: Facts) -> EndpointFacts:
    """For a check that declares needs=("endpoint",): the engine decided it is there."""
    assert facts.endpoint is not None, "declare needs=('endpoint',)"
    return facts.endpoint


def http_steps(ep: EndpointFacts, sniff: bool = False) -> list[ProbeStep]:
    """The HTTP exchanges of the configured protocol (sniffs of the other one only if asked)."""
    return [s for s in ep.steps if s.step not in NETWORK_STEPS and (sniff or s.step not in SNIFF_STEPS)]


def find(ep: EndpointFacts, *names: str) -> ProbeStep | None:
    return next((s for s in ep.steps if s.step in names), None)


def find_last(ep: EndpointFacts, *names: str) -> ProbeStep | None:
    return next((s for s in reversed(ep.steps) if s.step in names), None)


def route_missing(step: ProbeStep) -> bool:
    """No such route: 404/405, or a server's own words for it under another status (the collector's route_error)."""
    return (step.status in (404, 405) or bool(step.detail.get("route_error"))) and not step.detail.get("model_error")


def answered(step: ProbeStep | None) -> bool:
    """The route exists and speaks JSON: not 404/405 "no such route", not 5xx, not HTML."""
    return (
        step is not None
        and step.status is not None
        and step.status < 500
        and not route_missing(step)
        and bool(step.detail.get("json"))
    )


def server_says(step: ProbeStep) -> str:
    """What the server said, shortest faithful form: its error message, a page title, a summary
    of a well-formed answer, or the body."""
    d = step.detail
    message = d.get("error_message")
    if message:
        return str(message)
    if d.get("content_blocks") is not None:
        return f"Anthropic message, stop_reason {d.get('stop_reason')}"
    if d.get("choices"):
        return f"{d['choices']} choice(s), finish_reason {d.get('finish_reason')}"
    if d.get("model_ids") is not None and step.status == 200:
        ids = list(d["model_ids"])
        return f"{len(ids)} model(s): {', '.join(ids[:5])}"
    if d.get("sse_events"):
        return f"{d['sse_events']} SSE events"
    if step.detail.get("html_title"):
        return f"HTML page <title>{step.detail['html_title']}</title>"
    return " ".join(step.body_excerpt.split())[:300]


def line(step: ProbeStep) -> str:
    """One evidence line for an HTTP step."""
    if step.status is None:
        return f"{step.target} -> {step.error_class}: {step.error}"
    said = server_says(step)
    return f"{step.target} -> {step.status}" + (f" {said}" if said else "")


def setting_line(name: str, s: Setting) -> str:
    return f"{name} {s.value!r} (from {s.source})" if s.source else f"{name}: not set"


def host_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"


def is_local(host: str, addresses: list[str] = ()) -> bool:  # type: ignore[assignment]
    """Loopback, private, link-local, or a name that only means something inside one network."""
    if host in ("localhost", "host.docker.internal") or "." not in host and ":" not in host:
        return True
    if host.endswith(LOCAL_SUFFIXES):
        return True
    for candidate in [host, *addresses]:
        try:
            ip = ipaddress.ip_address(candidate.strip("[]"))
        except ValueError:
            continue
        if ip.is_loopback or ip.is_private or ip.is_link_local:
            return True
    return False


def env_var_of(source: str) -> str:
    """`env OPENAI_API_KEY` -> OPENAI_API_KEY; "" when the value did not come from the env."""
    return source.split()[1] if source.startswith("env ") and len(source.split()) > 1 else ""
