"""doctor/collect/safe_http.py against real servers on 127.0.0.1: the wall-clock watchdog, the
bounded inflater (a compressed answer decoded right, a bomb cut at the cap), origins."""

from __future__ import annotations

import gzip
import json
import time

import httpx
import pytest

from llm_doctor.collect import safe_http
from tests.servers import hostile
from tests.servers.http import FakeServer, Reply


def test_a_gzip_answer_is_decoded() -> None:
    data = json.dumps({"data": [{"id": "m"}]}).encode()
    with FakeServer(lambda req: Reply(200, gzip.compress(data), headers={"content-encoding": "gzip"})) as srv:
        with safe_http.client() as http:
            got = safe_http.fetch(http, "GET", srv.url + "/v1/models", 5, 1024)
    assert got.json() == {"data": [{"id": "m"}]} and not got.truncated
    assert srv.requests[0].headers["accept-encoding"] == "identity"


def test_a_gzip_bomb_stops_at_the_cap() -> None:
    hostile.bomb()
    with hostile.HostileServer(hostile.gzip_bomb) as srv, safe_http.client() as http:
        got = safe_http.fetch(http, "GET", srv.url() + "/x", 10, 1000)
    assert (len(got.body), got.truncated, got.body[:4]) == (1000, True, b"\0\0\0\0")


def test_the_watchdog_cuts_a_trickle_that_per_read_timeouts_never_would() -> None:
    with hostile.HostileServer(hostile.trickled_headers) as srv, safe_http.client() as http:
        start = time.monotonic()
        with pytest.raises(safe_http.WallClockTimeout, match="still waiting for the status line and headers"):
            safe_http.fetch(http, "GET", srv.url() + "/x", 1.0, 1000)
        assert time.monotonic() - start < 30  # the server trickles for 60 s; 0.3 s between bytes
        assert isinstance(safe_http.WallClockTimeout("x"), httpx.TimeoutException)


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("https://huggingface.co/x", "https://huggingface.co:443/y", True),
        ("http://h:8000/v1", "http://H:8000/metrics", True),
        ("http://h:8000/v1", "http://h:8001/v1", False),
        ("http://h/v1", "https://h/v1", False),
        ("http://h:80/", "http://h/", True),
    ],
)
def test_origin_is_scheme_host_and_port(a: str, b: str, same: bool) -> None:
    assert safe_http.same_origin(a, b) is same


def test_deep_json_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="nested too deep"):
        safe_http.parse_json("[" * 100_000 + "]" * 100_000)
