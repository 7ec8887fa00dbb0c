"""The hub fetch (doctor/collect/hub.py) against a real HTTP server on 127.0.0.1 standing in for
HF_ENDPOINT: config.json and the safetensors index, a gated repo answering 401 without HF_TOKEN,
the token sent only when set, an unreachable endpoint as a reason (never a traceback), the disk
cache answering a second call with the server gone, and `plan` turning offline into a finding."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from llm_doctor.collect import hub

CONFIG = json.loads(
    (Path(__file__).parent.parent / "fixtures/models/qwen2-7b-instruct-awq/config.json").read_text()
)
TOKEN = "hf_test_token_never_printed_0123456789"


class Hub(BaseHTTPRequestHandler):
    seen: list[tuple[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        auth = self.headers.get("Authorization", "")
        Hub.seen.append((self.path, auth))
        if self.path.startswith("/org/gated/") and auth != f"Bearer {TOKEN}":
            return self._send(401, {"error": "Access to model org/gated is restricted."})
        if self.path.endswith("/config.json") and self.path.startswith(("/org/open/", "/org/gated/")):
            return self._send(200, CONFIG)
        if self.path.endswith("/model.safetensors.index.json") and self.path.startswith("/org/open/"):
            return self._send(200, {"metadata": {"total_size": 5579320320}, "weight_map": {}})
        return self._send(404, {"error": "Entry not found"})

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    Hub.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("LLM_DOCTOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return monkeypatch


def test_config_and_index_total_size_then_the_disk_cache(server, env) -> None:
    url, httpd = server
    env.setenv("HF_ENDPOINT", url)
    config, total, reason = hub.fetch_model_files("org/open")
    assert (reason, total, config["num_key_value_heads"]) == ("", 5579320320, 4)
    assert [p for p, _ in Hub.seen] == [
        "/org/open/resolve/main/config.json",
        "/org/open/resolve/main/model.safetensors.index.json",
    ]
    httpd.shutdown()  # the second call must not need the server
    again = hub.fetch_model_files("org/open")
    assert again == (config, 5579320320, "") and len(Hub.seen) == 2


def test_gated_repo_is_401_without_token_and_served_with_it(server, env) -> None:
    url, _ = server
    env.setenv("HF_ENDPOINT", url)
    config, total, reason = hub.fetch_model_files("org/gated")
    assert config is None and total is None
    assert reason == f"{url} answered 401 for org/gated: gated or private (set HF_TOKEN)"
    assert Hub.seen[0][1] == ""  # no Authorization header without HF_TOKEN
    env.setenv("HF_TOKEN", TOKEN)
    config, total, reason = hub.fetch_model_files("org/gated")
    assert reason == "" and config["hidden_size"] == 3584 and total is None  # no index: 404
    assert Hub.seen[-1][1] == f"Bearer {TOKEN}"


def test_missing_repo_is_404_reason(server, env) -> None:
    url, _ = server
    env.setenv("HF_ENDPOINT", url)
    assert hub.fetch_model_files("org/missing") == (None, None, f"{url} has no org/missing/config.json (404)")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_endpoint_is_a_reason_not_a_traceback(env) -> None:
    env.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    config, total, reason = hub.fetch_model_files("org/open", timeout=2)
    assert config is None and reason.startswith("could not reach http://127.0.0.1:")
    assert "ConnectError" in reason


def test_plan_offline_hub_is_a_model_files_finding_and_the_token_never_printed(tmp_path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "llm_doctor", "plan", "--gpu", "H100", "--format", "json", "--",
         "vllm", "serve", "org/not-in-the-table-7B"],
        capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HF_ENDPOINT": f"http://127.0.0.1:{_closed_port()}", "HF_TOKEN": TOKEN,
             "LLM_DOCTOR_CACHE": str(tmp_path), "NO_COLOR": "1"},
    )  # fmt: skip
    report = json.loads(proc.stdout)
    first = report["findings"][0]
    assert proc.returncode == 1 and first["code"] == "load.model_files" and first["rank"] == 1
    assert "could not reach http://127.0.0.1:" in first["title"] + json.dumps(first["evidence"])
    assert TOKEN not in proc.stdout + proc.stderr


def test_plan_uses_the_hub_config_and_index_size(server, tmp_path) -> None:
    url, _ = server
    proc = subprocess.run(
        [sys.executable, "-m", "llm_doctor", "plan", "--gpu", "A100-80GB", "--format", "json", "--",
         "vllm", "serve", "org/open", "--max-model-len", "16384"],
        capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HF_ENDPOINT": url, "LLM_DOCTOR_CACHE": str(tmp_path), "NO_COLOR": "1"},
    )  # fmt: skip
    report = json.loads(proc.stdout)
    p = report["facts"]["plan"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # 5,579,320,320 bytes from the index = 5.20 GiB; fp16 KV of 28 layers x 4 heads x 128 = 57,344 B/token
    assert p["weights_gib_per_gpu"] == 5.2 and p["kv_bytes_per_token"] == 57344 and p["fits"] is True
    assert report["facts"]["model"]["source"] == "hub"


def test_the_token_is_bound_to_the_endpoint_origin_not_the_host(env) -> None:
    """A redirect to another port of the same host is another origin: the token stays behind,
    while the redirect itself is followed and the file read."""
    from tests.servers.http import FakeServer, Reply, Request

    with FakeServer(lambda req: Reply(200, CONFIG)) as other:
        moved = f"{other.url}/cdn/config.json"

        def hub_app(req: Request) -> Reply:
            if req.path.endswith("/config.json"):
                return Reply(302, b"", headers={"location": moved})
            return Reply(404, {"error": "Entry not found"})

        with FakeServer(hub_app) as home:
            env.setenv("HF_ENDPOINT", home.url)
            env.setenv("HF_TOKEN", TOKEN)
            config, _, reason = hub.fetch_model_files("org/open")
    assert (reason, config["num_key_value_heads"]) == ("", 4)
    assert home.requests[0].headers.get("authorization") == f"Bearer {TOKEN}"
    assert [r.path for r in other.requests] == ["/cdn/config.json"]
    assert "authorization" not in other.requests[0].headers


def test_a_trickling_hub_is_cut_by_the_timeout(env) -> None:
    import time

    from tests.servers import hostile

    with hostile.HostileServer(hostile.trickled_headers) as srv:
        env.setenv("HF_ENDPOINT", srv.url())
        start = time.monotonic()
        config, _, reason = hub.fetch_model_files("org/open", timeout=1.0)
        elapsed = time.monotonic() - start
    assert config is None and elapsed < 30  # the server would trickle for 60 s
    assert reason.startswith(f"could not reach {srv.url()} for org/open: WallClockTimeout: no complete answer within 1 s")
