"""Streaming: the same request with `stream: true` must come back as server-sent events that
arrive one by one and end with `data: [DONE]` (OpenAI) or `message_stop` (Anthropic).

A buffering proxy (nginx with `proxy_buffering on`) delivers every event at once at the end:
the client sees a long silence then the whole answer. Signs: a Content-Length on an event stream
(a real stream cannot know its length), or every event in one network read, late.
"""

from __future__ import annotations

import re

from llm_doctor.checks.access import transcript as t
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.access import ProbeStep
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

BUFFERED_AFTER_MS = 200  # a stream held back at least this long, and about as long as the plain answer took
NGINX = Fix("Turn buffering off for the API location in the proxy (nginx)", "proxy_buffering off;")
ACCEL = Fix("Or have the server tell nginx not to buffer", "X-Accel-Buffering: no")
# what holds an event stream back, in each proxy's own setting (matched on the name a log or a person gives it)
BUFFERING = (
    (re.compile(r"ingress", re.I), Fix("Turn response buffering off on the Ingress (ingress-nginx annotation)",
                                        'nginx.ingress.kubernetes.io/proxy-buffering: "off"')),
    (re.compile(r"nginx|openresty", re.I), NGINX),
    # Cloudflare streams text/event-stream unless it transforms (compresses) or buffers the answer (Enterprise
    # zones' Response Buffering setting); no-transform keeps the stream as the origin sent it
    (re.compile(r"cloudflare", re.I), Fix("Have the origin mark the stream untouchable and leave the zone's Response Buffering off",
                                          "Cache-Control: no-cache, no-transform")),
    (re.compile(r"caddy", re.I), Fix("Flush every write in Caddy's reverse_proxy", "flush_interval -1")),
    (re.compile(r"mod_proxy", re.I), Fix("Flush every packet in Apache's ProxyPass", "flushpackets=on")),
)


@check("access.streaming", "access", codes=("access.streaming_broken",), needs=("endpoint",), after=("access.request",))
def streaming(facts: Facts) -> Outcome:
    """SSE streaming: events arrive incrementally and the stream ends properly."""
    ep = t.endpoint(facts)
    step = t.find(ep, "stream", "messages_stream")
    if step is None:
        raise NotApplicable("no streaming request was sent (the plain request did not succeed)")
    d = step.detail
    events = int(d.get("sse_events") or 0)
    times = list(d.get("sse_event_ms") or [])
    end = "message_stop" if step.step == "messages_stream" else "data: [DONE]"

    def broken(title: str, *evidence: str, fixes: list[Fix] | None = None) -> Outcome:
        return Outcome([Finding("access.streaming_broken", title, [t.line(step), *evidence],
                                fixes or [Fix("Check the server or proxy in between; as a workaround disable streaming in the client")])])  # fmt: skip

    if step.error_class and events:
        return broken(f"the stream stalled after {events} events: nothing more for {d.get('timeout_s')} s and no {end}",
                      f"last event at {times[-1] if times else '?'} ms", fixes=[NGINX])  # fmt: skip
    if step.status != 200:
        return broken(f"non-streaming works, but stream: true answered {step.status or step.error_class}")
    if "text/event-stream" not in step.content_type.lower() and not events:
        return broken(f"stream: true was answered with {step.content_type or 'no Content-Type'}, not server-sent events",
                      fixes=[Fix("The server or a proxy ignores stream: true; check the gateway's streaming support")])  # fmt: skip
    if d.get("sse_malformed"):
        return broken(f"{d['sse_malformed']} of {events} events are not JSON")
    if d.get("cut_after_s") and not d.get("sse_done"):
        return broken(f"the stream did not end within {d['cut_after_s']:g} s: {events} events and no {end}")
    if not d.get("sse_done"):
        return broken(f"the stream ended without {end} after {events} events")
    length = step.headers.get("content-length")
    plain = t.find_last(ep, "chat", "candidate_chat", "messages", "candidate_messages")
    if events >= 2 and (length or _one_late_read(step, times, plain.duration_ms if plain else 0.0)):
        why = f"Content-Length: {length} on an event stream" if length else f"all {events} events arrived in one read, {times[0]:.0f} ms after the request"
        return broken("the stream is buffered: events arrive all at once at the end, not as they are generated", why,
                      fixes=[NGINX, ACCEL])  # fmt: skip
    first = f"first event after {times[0]:.0f} ms, " if times else ""
    return Outcome([], f"{first}{events} events, ended with {end}")


def _one_late_read(step: ProbeStep, times: list[float], plain_ms: float) -> bool:
    """Every event in one network read, and the first one only when a whole non-streamed answer
    would have been ready: what a buffering proxy produces, never a live stream of 16 tokens."""
    one_read = int(step.detail.get("sse_reads_with_events") or 0) == 1
    return one_read and len(times) >= 2 and times[0] >= max(BUFFERED_AFTER_MS, 0.5 * plain_ms)


def buffering_fixes(proxy: str) -> list[Fix]:
    """The setting that stops the named proxy from holding the stream back; nginx's when none is named
    (the most common one in front of an LLM server), with the header any nginx-based one obeys."""
    fix = next((f for name, f in BUFFERING if name.search(proxy)), None) if proxy else None
    if fix is None:
        return [Fix(f"Turn response buffering off in the proxy or gateway between client and server{f' ({proxy})' if proxy else ''}; "
                    "behind nginx, in the API's location", "proxy_buffering off;"), ACCEL]
    return [fix] if fix is not NGINX else [NGINX, ACCEL]
