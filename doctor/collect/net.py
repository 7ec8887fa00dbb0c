"""Socket-level probes for the endpoint collector: proxy choice from the environment, DNS, TCP
connect and the TLS handshake, each returning a ProbeStep.

Done by hand rather than left to httpx because httpx folds DNS failure and a refused port into one
`ConnectError`, and a report must say which of them happened, and with which proxy variable.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Mapping

from llm_doctor.facts.access import ProbeStep

# curl / requests / httpx order: the scheme's own variable (lower case first), then ALL_PROXY
PROXY_ORDER = {
    "http": ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"),
    "https": ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"),
}


def proxy_for(scheme: str, host: str, port: int, env: Mapping[str, str]) -> tuple[str, str, str]:
    """(variable, proxy URL, NO_PROXY entry that bypassed it) for a request to scheme://host:port."""
    no_proxy_var = next((v for v in ("no_proxy", "NO_PROXY") if env.get(v)), "")
    if no_proxy_var:
        entry = no_proxy_match(host, port, env[no_proxy_var])
        if entry:
            return "", "", f"{no_proxy_var}={entry}"
    for var in PROXY_ORDER.get(scheme, ()):
        if env.get(var):
            return var, env[var].strip(), ""
    return "", "", ""


def no_proxy_match(host: str, port: int, no_proxy: str) -> str:
    """The NO_PROXY entry that covers host (exact, domain suffix, `*`, IP or CIDR), or ""."""
    host = host.lower().strip("[]")
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return entry
        name, _, entry_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if entry_port and entry_port.isdigit() and int(entry_port) != port:
            continue
        name = name or entry
        try:
            if ipaddress.ip_address(host) in ipaddress.ip_network(name.strip("[]"), strict=False):
                return entry
            continue
        except ValueError:
            pass
        name = name.lstrip("*").lstrip(".")
        if host == name or host.endswith("." + name):
            return entry
    return ""


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def resolve(host: str, port: int, timeout: float) -> tuple[ProbeStep, list[str]]:
    """getaddrinfo in a daemon thread, so an unreachable resolver cannot outlive the deadline."""
    step = ProbeStep("dns", f"{host}")
    try:
        ipaddress.ip_address(host.strip("[]"))
        step.ok, step.detail = True, {"literal": True}
        return step, [host.strip("[]")]
    except ValueError:
        pass
    result: dict[str, object] = {}

    def lookup() -> None:
        try:
            result["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            result["exc"] = exc

    start = time.perf_counter()
    worker = threading.Thread(target=lookup, daemon=True)
    worker.start()
    worker.join(timeout)
    step.duration_ms = _ms(start)
    if worker.is_alive():
        step.error_class, step.error = "TimeoutError", f"no answer from the resolver within {timeout:g} s"
        return step, []
    exc = result.get("exc")
    if isinstance(exc, OSError):
        step.error_class = type(exc).__name__
        step.error = str(exc)
        step.detail = {"errno": getattr(exc, "errno", None)}
        return step, []
    addrs = list(dict.fromkeys(str(info[4][0]) for info in result.get("infos", [])))  # type: ignore[union-attr]
    step.ok, step.detail = bool(addrs), {"addresses": addrs}
    return step, addrs


def connect(addrs: list[str], port: int, timeout: float, label: str) -> ProbeStep:
    """TCP connect to the first address that accepts (at most three tried)."""
    step = ProbeStep("tcp", label)
    start = time.perf_counter()
    errors: list[str] = []
    for addr in addrs[:3]:
        try:
            with socket.create_connection((addr, port), timeout=timeout):
                step.ok, step.detail = True, {"address": addr}
                break
        except OSError as exc:
            step.error_class = "TimeoutError" if isinstance(exc, socket.timeout) else type(exc).__name__
            step.detail = {"errno": getattr(exc, "errno", None), "address": addr}
            errors.append(f"{addr}:{port}: {exc or 'timed out'}")
    if not step.ok:
        step.error = "; ".join(errors) or "no address to connect to"
    step.duration_ms = _ms(start)
    return step


VERIFY_REASONS = {10: "expired", 18: "self-signed", 19: "self-signed CA in chain", 20: "unknown CA", 62: "wrong host", 64: "wrong host"}


def tls_handshake(addr: str, host: str, port: int, ctx: ssl.SSLContext, timeout: float, name: str = "tls") -> ProbeStep:
    """A TLS handshake with the client's verification settings; names the reason it failed.
    Bounded in wall-clock time: a server that accepts and never finishes (or trickles) its side of
    the handshake is a handshake timeout, not a certificate problem."""
    from llm_doctor.collect.safe_http import Watchdog

    step = ProbeStep(name, f"{host}:{port}")
    start = time.perf_counter()
    connected = False
    with Watchdog(timeout, grace=0.0) as dog:
        try:
            with socket.create_connection((addr, port), timeout=timeout) as sock:
                connected = True
                dog.watch(sock)
                with ctx.wrap_socket(sock, server_hostname=host) as tls:
                    step.ok = True
                    step.detail = {"version": tls.version() or ""}
        except ssl.SSLCertVerificationError as exc:
            step.error_class = "SSLCertVerificationError"
            step.error = str(exc)
            step.detail = {"verify_code": exc.verify_code, "reason": VERIFY_REASONS.get(exc.verify_code, exc.verify_message)}
        except (ssl.SSLError, OSError) as exc:
            step.error_class = type(exc).__name__
            step.error = str(exc) or "closed"
            step.detail = {"reason": _handshake_failure(exc, connected and (dog.fired or isinstance(exc, TimeoutError)))}
    step.duration_ms = _ms(start)
    if step.detail.get("reason") == HANDSHAKE_TIMEOUT:
        step.error_class, step.error = "TimeoutError", f"the TLS handshake did not complete within {timeout:g} s"
    return step


HANDSHAKE_TIMEOUT = "handshake timed out"
CLOSED = "closed during the handshake"


def _handshake_failure(exc: OSError, timed_out: bool) -> str:
    if timed_out:
        return HANDSHAKE_TIMEOUT
    if isinstance(exc, (ssl.SSLEOFError, ssl.SSLZeroReturnError)) or getattr(exc, "reason", "") == "UNEXPECTED_EOF_WHILE_READING":
        return CLOSED  # the same close, seen before or after the ClientHello went out
    if isinstance(exc, ssl.SSLError):
        plain = exc.reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST")
        return "not TLS (the port speaks plain HTTP)" if plain else str(exc.reason or exc)
    return CLOSED


FIRST_BYTES = 200


def first_bytes(addr: str, host: str, port: int, ctx: ssl.SSLContext | None, path: str, timeout: float) -> ProbeStep:
    """What the server sends back to a plain `GET path` (no credentials), raw: the first bytes of
    an answer the HTTP client could not parse, so a report can quote what really came back."""
    from llm_doctor.collect.safe_http import Watchdog

    step = ProbeStep("raw", f"{host}:{port}")
    start = time.perf_counter()
    seen = b""
    request = f"GET {path or '/'} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: llm-doctor/0.1\r\nConnection: close\r\n\r\n"
    with Watchdog(timeout, grace=0.0) as dog:
        try:
            with socket.create_connection((addr, port), timeout=timeout) as raw:
                dog.watch(raw)
                sock = ctx.wrap_socket(raw, server_hostname=host) if ctx is not None else raw
                sock.sendall(request.encode("utf-8", errors="replace"))
                while len(seen) < FIRST_BYTES:
                    data = sock.recv(FIRST_BYTES - len(seen))
                    if not data:
                        break
                    seen += data
            step.ok = True
        except OSError as exc:  # ssl.SSLError is an OSError
            step.error_class, step.error = type(exc).__name__, str(exc) or "closed"
    step.duration_ms = _ms(start)
    step.detail = {"first_bytes": repr(seen), "bytes": len(seen), "timed_out": dog.fired, "tls_like": seen[:1] in (b"\x15", b"\x16")}
    return step


def ssl_context(ca_bundle: str | None, insecure: bool) -> ssl.SSLContext:
    """The verification a client would use: --insecure, else the CA bundle given, else certifi."""
    if insecure:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    if ca_bundle:
        return ssl.create_default_context(cafile=ca_bundle)
    try:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    except ImportError:
        return ssl.create_default_context()
