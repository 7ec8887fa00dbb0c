"""The network path, in the order a request meets it: proxy, DNS, TCP, TLS.

The first step that failed is the finding; what came after it was never tried. A proxy named by
an environment variable is judged as the proxy (naming the variable), because "connection
refused" from a dead proxy sends people to debug a server that is fine. Two warnings ride here
too: certificate checks switched off by --insecure, and a key sent over plain http to a host
outside the local network.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from llm_doctor.checks.access import transcript as t
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.access import EndpointFacts, ProbeStep
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

CODES = ("access.proxy_failed", "access.dns_failed", "access.connect_failed", "access.tls_failed")


@check("access.network", "access", codes=CODES, needs=("endpoint",))
def network(facts: Facts) -> Outcome:
    """Proxy from the environment, DNS, TCP connect and TLS to the endpoint."""
    ep = t.endpoint(facts)
    if ep.url_error:
        raise NotApplicable(f"not probed: {ep.url_error}")
    findings = [f for f in (_first_failure(ep), _http_level(ep)) if f is not None][:1]
    findings += _warnings(facts, ep)
    if findings:
        return Outcome(findings)
    dns = t.find(ep, "dns")
    via = f" via {ep.proxy_var}={ep.proxy_url}" if ep.proxy_var else ""
    return Outcome([], f"reached {t.host_of(ep.base_url)} ({', '.join(ep.resolved) or '?'}){via}" if dns else "ok")


def _proxy_fixes(ep: EndpointFacts) -> list[Fix]:
    host = t.host_of(ep.base_url)
    var = ep.proxy_var
    return [
        Fix(f"Bypass the proxy for {host}", f"export NO_PROXY={host},localhost,127.0.0.1"),
        Fix(f"Or fix/unset the proxy variable {var}", f"unset {var} {var.swapcase()}"),
    ]


def _first_failure(ep: EndpointFacts) -> Finding | None:
    for step in ep.steps:
        if step.step not in t.NETWORK_STEPS or step.ok and step.step != "tls_sniff" or step.detail.get("ignored_by_insecure"):
            continue
        if step.step == "proxy_unused":
            continue
        if step.step == "proxy":
            return Finding("access.proxy_failed", f"the proxy in {step.detail.get('var')} is unusable", [step.error], _proxy_fixes(ep))
        via = bool(step.detail.get("via_proxy"))
        if step.step == "dns":
            return _dns(ep, step, via)
        if step.step == "tcp":
            return _tcp(ep, step, via)
        if step.step == "tls":
            return _tls(ep, step)
        if step.step == "tls_sniff" and step.ok:
            https = ep.base_url.replace("http://", "https://", 1)
            return Finding(
                "access.tls_failed",
                "the port speaks HTTPS but the base URL says http://",
                [t.line(_last_http(ep) or step), f"a TLS handshake on {step.target} succeeded ({step.detail.get('version', 'TLS')})"],
                [Fix("Use https:// in the base URL", f"--base-url {https}")],
            )
    return None


def _dns(ep: EndpointFacts, step: ProbeStep, via: bool) -> Finding:
    evidence = [f"getaddrinfo({step.target}) failed: {step.error_class}: {step.error}"]
    if via:
        return Finding(
            "access.proxy_failed",
            f"the proxy host {step.target} (from {ep.proxy_var}) does not resolve",
            [f"{ep.proxy_var}={ep.proxy_url}", *evidence],
            _proxy_fixes(ep),
        )
    return Finding(
        "access.dns_failed",
        f"the host name {step.target} does not resolve",
        evidence,
        [
            Fix("Check the host name for a typo, or use the server's IP address", f"getent hosts {step.target}"),
            Fix("Inside Docker/Kubernetes use the service name on the shared network, or host.docker.internal for the host"),
        ],
    )


def _tcp(ep: EndpointFacts, step: ProbeStep, via: bool) -> Finding:
    errno = step.detail.get("errno")
    how = "timed out" if step.error_class == "TimeoutError" else "was refused" if errno == 111 else "failed"
    if via:
        return Finding(
            "access.proxy_failed",
            f"the proxy {ep.proxy_url} (from {ep.proxy_var}) is not reachable: the connection {how}",
            [f"{ep.proxy_var}={ep.proxy_url}", f"connect {step.target}: {step.error}"],
            _proxy_fixes(ep),
        )
    host, _, port = step.target.rpartition(":")
    fixes = [Fix(f"Check that the server is running and listening on port {port}", f"curl -sS {ep.base_url.rstrip('/')}/models")]
    if how == "was refused":
        fixes.append(Fix(f"Start it on that port (vLLM: vllm serve MODEL --port {port}); in Docker publish it", f"-p {port}:{port}"))
        if not t.is_local(host):
            fixes.append(Fix("If it runs on another machine, bind all interfaces", "--host 0.0.0.0"))
    else:
        fixes.append(Fix("Nothing answered: check the IP, a firewall or security group, and the container network"))
    return Finding(
        "access.connect_failed", f"the TCP connection to {step.target} {how}", [f"connect {step.target}: {step.error_class}: {step.error}"], fixes
    )


def _tls(ep: EndpointFacts, step: ProbeStep) -> Finding:
    reason = str(step.detail.get("reason") or step.error_class)
    evidence = [f"TLS handshake with {step.target}: {step.error}"]
    if reason.startswith("not TLS"):
        http = ep.base_url.replace("https://", "http://", 1)
        return Finding(
            "access.tls_failed", "the port speaks plain HTTP but the base URL says https://", evidence,
            [Fix("Use http:// in the base URL", f"--base-url {http}")],
        )  # fmt: skip
    if reason == "handshake timed out":
        return Finding(
            "access.tls_failed",
            f"the TLS handshake with {step.target} timed out: TCP was accepted but the handshake never finished (not a certificate problem)",
            [f"TLS handshake with {step.target}: {step.error} (after {step.duration_ms / 1000:.1f} s)"],
            [Fix("See whether the port speaks TLS at all, and how far the handshake gets", f"openssl s_client -connect {step.target} -servername {step.target.rpartition(':')[0]}"),
             Fix("A load balancer or firewall that accepts and holds connections, or a server too busy to answer: check it; "
                 "if it speaks plain HTTP, use http://")],
        )  # fmt: skip
    if reason == "CA bundle unreadable":
        return Finding("access.tls_failed", "the CA bundle cannot be used", [step.error],
                       [Fix("Point it at a readable PEM file, or unset it to use the default CAs", "unset SSL_CERT_FILE REQUESTS_CA_BUNDLE")])  # fmt: skip
    if step.error_class != "SSLCertVerificationError":  # a reset, an alert, no shared protocol: the certificate was never judged
        return Finding(
            "access.tls_failed", f"the TLS handshake with {step.target} failed: {reason} (not a certificate problem)", evidence,
            [Fix("See how far the handshake gets and what the server offers", f"openssl s_client -connect {step.target} -servername {step.target.rpartition(':')[0]}")],
        )  # fmt: skip
    fixes = {
        "expired": [Fix("Renew the server's certificate (the client clock may also be wrong: check `date`)")],
        "wrong host": [Fix("Use the host name the certificate was issued for, or reissue it with this name in subjectAltName")],
    }.get(reason, [
        Fix("Trust the CA that signed the server's certificate", "--ca-bundle /path/to/ca.pem"),
        Fix("Clients: the same CA via SSL_CERT_FILE (httpx/OpenAI SDK) or REQUESTS_CA_BUNDLE", "export SSL_CERT_FILE=/path/to/ca.pem"),
    ])  # fmt: skip
    fixes.append(Fix("To confirm that only verification fails (never in production)", "--insecure"))
    return Finding("access.tls_failed", f"TLS certificate verification failed: {reason}", evidence, fixes)


def _last_http(ep: EndpointFacts) -> ProbeStep | None:
    return next((s for s in reversed(ep.steps) if s.step not in t.NETWORK_STEPS), None)


def _http_level(ep: EndpointFacts) -> Finding | None:
    """Failures only the HTTP client could see: a proxy that refused CONNECT or answered itself,
    TLS failing inside a proxy tunnel."""
    first = next(iter(t.http_steps(ep)), None)
    if first is None:
        return None
    tunnel_tls = first.detail.get("phase") == "in the TLS handshake"  # the proxy connected us; the server's TLS failed
    if ep.proxy_var and not tunnel_tls and (first.error_class in ("ProxyError", "ConnectError", "ConnectTimeout") or first.status == 407):
        return Finding(
            "access.proxy_failed",
            f"the proxy {ep.proxy_url} (from {ep.proxy_var}) did not pass the request on",
            [f"{ep.proxy_var}={ep.proxy_url}", t.line(first)],
            _proxy_fixes(ep),
        )
    if ep.proxy_var and first.status in (403, 502, 503, 504) and t.is_local(t.host_of(ep.base_url)):
        return Finding(
            "access.proxy_failed",
            f"the proxy from {ep.proxy_var} answered for a local server it cannot reach",
            [f"{ep.proxy_var}={ep.proxy_url}", t.line(first)],
            _proxy_fixes(ep),
        )
    if first.error_class == "ConnectError" and "CERTIFICATE_VERIFY_FAILED" in first.error:
        return Finding(
            "access.tls_failed", "TLS certificate verification failed", [t.line(first)],
            [Fix("Trust the CA that signed the server's certificate", "--ca-bundle /path/to/ca.pem")],
        )  # fmt: skip
    return None


def _warnings(facts: Facts, ep: EndpointFacts) -> list[Finding]:
    out = []
    scheme = urlsplit(ep.base_url).scheme
    for step in ep.steps:
        if step.step == "proxy_unused" and not step.ok:
            var = str(step.detail.get("var"))
            other = "https://" if "http_" in var.lower() and "https" not in var.lower() else "http://" if "https" in var.lower() else "other"
            out.append(Finding(
                "access.proxy_failed",
                f"{var}={step.target} is unreachable: this {scheme}:// endpoint does not use it, but {other} requests from this environment will fail",
                [f"{var}={step.target}", f"connect: {step.error_class}: {step.error}"],
                [Fix(f"Unset or fix {var}", f"unset {var}")], severity="warn",
            ))  # fmt: skip
    tls = t.find(ep, "tls")
    if ep.insecure:
        evidence = ["--insecure: certificates are not verified"]
        if tls is not None and tls.detail.get("ignored_by_insecure"):
            evidence.append(f"verification would fail: {tls.detail.get('reason')} ({tls.error})")
        out.append(
            Finding(
                "access.tls_failed", "TLS verification is switched off", evidence,
                [Fix("Trust the server's CA instead of disabling verification", "--ca-bundle /path/to/ca.pem")], severity="warn",
            )  # fmt: skip
        )
    settings = facts.settings
    parts = urlsplit(ep.base_url)
    host = (parts.hostname or "").lower()
    if settings and settings.api_key.value and parts.scheme == "http" and not ep.proxy_var and not t.is_local(host, ep.resolved):
        out.append(
            Finding(
                "access.tls_failed",
                f"the API key is sent over plain http to {host}, outside the local network",
                [f"base URL {ep.base_url} (from {settings.base_url.source})", f"{host} resolves to {', '.join(ep.resolved) or '?'}"],
                [Fix("Serve the API over TLS and use https://", f"--base-url {ep.base_url.replace('http://', 'https://', 1)}")],
                severity="warn",
            )
        )
    return out
