"""The base URL: well-formed, and its path the one the API lives under.

Path mistakes are the commonest access failure after keys: `/v1` missing or doubled, the chat
path pasted in, query parameters, a trailing slash a client doubles. Not every gateway lives under
`/v1` (`/compatible-mode/v1`, `/v1beta/openai`, `/api/paas/v4`, `/api`), so the probe tries the
candidates and this check names the corrected URL that answered, rather than guessing.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from llm_doctor.checks.access import transcript as t
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.access import EndpointFacts, SettingsFacts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

PASTED = ("/chat/completions", "/completions", "/messages", "/models", "/embeddings", "/responses")


@check("access.base_url", "access", codes=("access.base_url_invalid",), needs=("endpoint",))
def base_url(facts: Facts) -> Outcome:
    """Base URL well-formed, and its path the one the API answers under (candidates probed)."""
    ep = t.endpoint(facts)
    settings = facts.settings or SettingsFacts()
    where = t.setting_line("base URL", settings.base_url)
    if ep.url_error:
        return Outcome([_malformed(ep, settings, where)])
    static = _static_problems(ep.base_url, ep.protocol)
    finding = _probed(ep, where, static) or _static(ep, where, static)
    findings = [finding] if finding else []
    slash = t.find(ep, "slash")
    if slash is not None and t.route_missing(slash) and not findings:
        findings.append(
            Finding(
                "access.base_url_invalid",
                "the base URL ends with '/': clients that add '/chat/completions' request '//…', which this server answers 404",
                [where, t.line(slash)],
                [Fix("Drop the trailing slash", f"--base-url {ep.base_url.strip().rstrip('/')}")],
                severity="warn",
            )
        )
    if not findings and not t.http_steps(ep):
        raise NotApplicable("the base URL is well-formed; its path could not be tried (no HTTP answer)")
    return Outcome(findings, "" if findings else f"{ep.working_base_url or ep.base_url} answers")


def _malformed(ep: EndpointFacts, settings: SettingsFacts, where: str) -> Finding:
    raw = (settings.base_url.value or "").strip()
    var = "ANTHROPIC_BASE_URL" if ep.protocol == "anthropic" else "OPENAI_BASE_URL"
    if not raw:
        example = "http://HOST:8000" if ep.protocol == "anthropic" else "http://HOST:8000/v1"
        return Finding(
            "access.base_url_invalid", "no base URL is configured", [ep.url_error],
            [Fix("Give the endpoint's base URL", f"--base-url {example}"), Fix("Or set it for clients", f"export {var}={example}")],
        )  # fmt: skip
    fixed = "".join(raw.split())
    if "://" not in fixed:
        fixed = "http://" + fixed
    try:
        parts = urlsplit(fixed)
    except ValueError:  # a '[host]' urlsplit refuses (the collector's url_error says why): nothing to propose
        parts = urlsplit("")
    fixes = []
    if parts.scheme in ("http", "https") and parts.hostname and fixed != raw:
        fixes.append(Fix("Use a well-formed URL", f"--base-url {fixed}"))
    else:
        fixes.append(Fix("Give scheme, host and port", "--base-url http://HOST:8000/v1"))
    return Finding("access.base_url_invalid", f"the base URL is malformed: {ep.url_error}", [where], fixes)


def _static_problems(url: str, protocol: str) -> tuple[list[str], str]:
    """What is wrong with the URL's path on its face, and the URL with those things removed."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    problems = []
    if parts.query:
        problems.append(f"query parameters ?{parts.query}: clients append paths after them")
    for suffix in PASTED:
        if path.endswith(suffix):
            problems.append(f"an endpoint path '{suffix}' is pasted into the base URL: clients append it again")
            path = path[: -len(suffix)].rstrip("/")
            break
    while "/v1/v1" in path:
        problems.append("'/v1' is doubled")
        path = path.replace("/v1/v1", "/v1")
    if protocol == "anthropic" and path.endswith("/v1"):
        problems.append("Anthropic clients (Claude Code, the SDK) append '/v1/messages' themselves: the base URL ends before '/v1'")
        path = path[:-3]
    return problems, urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _probed(ep: EndpointFacts, where: str, static: tuple[list[str], str]) -> Finding | None:
    """A finding from what the probe saw: another path answered, a redirect, or nothing answered."""
    problems, _ = static
    first = next(iter(t.http_steps(ep)), None)
    if first is not None and first.status in (301, 302, 303, 307, 308):
        location = first.headers.get("location", "")
        target = location
        for suffix in PASTED:
            if target.rstrip("/").endswith(suffix):
                target = target.rstrip("/")[: -len(suffix)]
                break
        return Finding(
            "access.base_url_invalid",
            f"the base URL redirects to {location}; clients with a key do not (and should not) follow it",
            [where, t.line(first), f"Location: {location}"],
            [Fix("Use the URL it redirects to", f"--base-url {target}" if target else None)],
        )
    working = ep.working_base_url
    configured = ep.base_url.strip().split("?")[0].rstrip("/")
    if working and working.rstrip("/") != configured:
        missed = t.find(ep, "models", "chat", "messages")
        hit = t.find_last(ep, "candidate_models", "candidate_chat", "candidate_messages")
        evidence = [where, *problems]
        if missed is not None:
            evidence.append(t.line(missed))
        if hit is not None:
            evidence.append(f"{hit.target} -> {hit.status}: the API answers under {working}")
        var = "ANTHROPIC_BASE_URL" if ep.protocol == "anthropic" else "OPENAI_BASE_URL"
        title = "; ".join(problems) if problems else f"the API is not under {configured}; it answers under {working}"
        return Finding(
            "access.base_url_invalid",
            f"the base URL's path is wrong: {title}",
            evidence,
            [Fix("Use the base URL that answered", f"--base-url {working}"), Fix("Same for clients", f"export {var}={working}")],
        )
    steps = t.http_steps(ep)
    protocol_route = t.find(ep, "chat", "messages")
    if protocol_route is not None and t.route_missing(protocol_route) and not working:
        if t.answered(t.find(ep, "sniff_messages")) or t.answered(t.find(ep, "sniff_chat")):
            return None  # the other protocol answers: access.protocol says so
        tried = [s.target for s in steps if s.step.startswith(("candidate", "chat", "messages", "models"))]
        return Finding(
            "access.base_url_invalid",
            "no API route answered at the base URL or at the paths gateways use",
            [where, t.line(protocol_route), "tried: " + ", ".join(tried[:12])],
            [Fix("Use the base URL from the server's or gateway's documentation (OpenAI style ends in /v1)", None)],
        )
    return None


def _static(ep: EndpointFacts, where: str, static: tuple[list[str], str]) -> Finding | None:
    """Path problems visible in the URL itself, when the probe did not settle the question."""
    problems, fixed = static
    if not problems:
        return None
    main = t.find(ep, "chat", "messages", "models")
    if main is not None and main.ok and not urlsplit(ep.base_url).query:
        return None  # the server answered under this path: e.g. a gateway that really lives there
    evidence = [where, *problems] + ([t.line(main)] if main is not None else [])
    return Finding("access.base_url_invalid", f"the base URL's path is wrong: {problems[0]}", evidence, [Fix("Use", f"--base-url {fixed}")])
