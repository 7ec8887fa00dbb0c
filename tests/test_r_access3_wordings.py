"""Client-side failures as the clients' own sources word them, judged end to end (rank-1 code and its evidence):
the wordings r-access3 covers (another provider's key, a traceback cut inside the TLS handshake, ...)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.findings import Finding
from llm_doctor.report import build_report


def findings_of(tmp_path: Path, text: str) -> list[Finding]:
    path = tmp_path / "client.log"
    path.write_text(text)
    facts = load_paths([str(path)], Deadline(30))
    return build_report(run_checks(facts, select(load_checks()), Deadline(30)), facts).findings


def _cut_traceback(*frames: tuple[str, int, str, str]) -> str:
    """A Python traceback whose paste ends after its last frame's code line (no exception line)."""
    lines = ["Traceback (most recent call last):\n"]
    for path, line, func, code in frames:
        lines += [f'  File "{path}", line {line}, in {func}\n', f"    {code}\n"]
    return "".join(lines)


SITE = "/home/u/.venv/lib/python3.11/site-packages"
# (case, log text, rank-1 code, a substring of its evidence)
CASES = [
    # the OpenAI API masks a long key it refuses and keeps its first characters: a Google (AIza) or Groq (gsk_) key sent
    # to api.openai.com is well formed, only for another provider (codes.md: access.key_rejected)
    ("openai-gemini-key", "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: "
     "AIzaSyB1**********************3xYk. You can find your API key at https://platform.openai.com/account/api-keys.', "
     "'type': 'invalid_request_error', 'param': None, 'code': 'invalid_api_key'}}\n", "access.key_rejected", "AIzaSyB1"),
    ("openai-groq-key", "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: "
     "gsk_abcd*****************************************wxyz. You can find your API key at "
     "https://platform.openai.com/account/api-keys.'}}\n", "access.key_rejected", "gsk_abcd"),
    # a quote kept in the key is still its shape (the API echoes the key's first characters)
    ("openai-quoted-key", "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: "
     "\"sk-proj***************************abcd. You can find your API key at https://platform.openai.com/account/api-keys.'}}\n",
     "access.key_malformed", "Incorrect API key provided"),
    # a traceback cut inside urllib3's TLS wrap (urllib3 2.x connection.py -> util/ssl_.py)
    ("urllib3-cut-in-tls", _cut_traceback(
        (f"{SITE}/urllib3/connectionpool.py", 1092, "_validate_conn", "conn.connect()"),
        (f"{SITE}/urllib3/connection.py", 635, "connect", "sock_and_verified = _ssl_wrap_socket_and_match_hostname("),
        (f"{SITE}/urllib3/connection.py", 782, "_ssl_wrap_socket_and_match_hostname", "ssl_sock = ssl_wrap_socket("),
        (f"{SITE}/urllib3/util/ssl_.py", 469, "ssl_wrap_socket", "ssl_sock = _ssl_wrap_socket_impl(sock, context, tls_in_tls, "
         "server_hostname)")), "access.tls_failed", "ssl_wrap_socket"),
    # httpx/httpcore: the cut falls in httpcore's start_tls, then CPython's ssl.py handshake
    ("httpcore-cut-in-handshake", _cut_traceback(
        (f"{SITE}/httpcore/_sync/connection.py", 156, "_connect", "stream = stream.start_tls(**kwargs)"),
        (f"{SITE}/httpcore/_backends/sync.py", 168, "start_tls", "sock = ssl_context.wrap_socket("),
        ("/usr/lib/python3.11/ssl.py", 517, "wrap_socket", "return self.sslsocket_class._create("),
        ("/usr/lib/python3.11/ssl.py", 1346, "do_handshake", "self._sslobj.do_handshake()")), "access.tls_failed", "do_handshake"),
    # requests' ProxyError around urllib3 2.x's `ProxyError('Unable to connect to proxy', <cause>)`: the proxy refused the
    # CONNECT; NCCL's "Connect to {} failed : {}" fits inside the line and must not outvote it
    ("urllib3-2-proxy-tunnel-403", "requests.exceptions.ProxyError: HTTPSConnectionPool(host='api.openai.com', port=443): Max "
     "retries exceeded with url: /v1/chat/completions (Caused by ProxyError('Unable to connect to proxy', "
     "OSError('Tunnel connection failed: 403 Forbidden')))\n", "access.proxy_failed", "Unable to connect to proxy"),
    # a connection refused through a SOCKS proxy (urllib3/contrib/socks.py): the refusal is the proxy's
    ("urllib3-socks-refused", "requests.exceptions.ConnectionError: SOCKSHTTPSConnectionPool(host='api.openai.com', port=443): "
     "Max retries exceeded with url: /v1/models (Caused by NewConnectionError('<urllib3.contrib.socks.SOCKSHTTPSConnection "
     "object at 0x7f2c>: Failed to establish a new connection: [Errno 111] Connection refused'))\n", "access.proxy_failed",
     "SOCKSHTTPSConnectionPool"),
    ("requests-no-pysocks", "requests.exceptions.InvalidSchema: Missing dependencies for SOCKS support.\n", "access.proxy_failed",
     "Missing dependencies for SOCKS support"),
    ("urllib3-socks-scheme", "ValueError: Unable to determine SOCKS version from socks://127.0.0.1:7890/\n", "access.proxy_failed",
     "Unable to determine SOCKS version"),
    ("python-socks-refused", "python_socks._errors.ProxyConnectionError: Could not connect to proxy 127.0.0.1:1080 "
     "[Connection refused]\n", "access.proxy_failed", "Could not connect to proxy"),
    ("ssl-https-proxy-scheme", "ValueError: check_hostname requires server_hostname\n", "access.proxy_failed", "check_hostname"),
    ("go-socks-dial", 'Post "https://api.openai.com/v1/chat/completions": socks connect tcp 127.0.0.1:1080->api.openai.com:443: '
     "dial tcp 127.0.0.1:1080: connect: connection refused\n", "access.proxy_failed", "socks connect tcp"),
    ("reqwest-tunnel", "Error: error sending request for url (https://api.openai.com/v1/chat/completions): client error (Connect): "
     "unsuccessful tunnel\n", "access.proxy_failed", "unsuccessful tunnel"),
    # a stream that carried nothing, or nothing but lines that are no SSE data
    ("langchain-no-chunks", "ValueError: No generation chunks were returned\n", "access.streaming_broken", "No generation chunks"),
    ("langchain-no-generations", "ValueError: No generations found in stream.\n", "access.streaming_broken", "No generations found"),
    ("go-openai-empty-lines", "error, stream has sent too many empty messages\n", "access.streaming_broken", "too many empty messages"),
]


@pytest.mark.parametrize(("name", "text", "code", "evidence"), CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path: Path, name: str, text: str, code: str, evidence: str) -> None:
    found = findings_of(tmp_path, text)
    assert found and found[0].code == code, [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence
