"""`--wait-ready SECONDS` against servers that start late, never start, or crash.

No assertion depends on how fast this machine is: the late server is started when the doctor has
said (on stderr) that nothing listens yet, and it answers "Loading model" for a fixed number of
health polls, not for a time. The real llama-server is started and polled at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT
from tests.peers.fixtures import LLAMA_ALIAS, LLAMA_KEY, clean_env, free_port, manifest_entry, stop
from tests.servers.http import FakeServer, Reply, Request
from tests.servers.openai_like import VllmLike

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
KV_LOG = str(ROOT / "fixtures" / "logs" / "vllm-0.4.1-a10g-mistral7b-kv-cache-insufficient.log")
# llama-server's answer on /health while it loads the model (tools/server/server.cpp, ERROR_TYPE_UNAVAILABLE)
LOADING = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}


class Starting:
    """/health answers 503 "Loading model" `loading` times, then 200; the API behind it is vLLM's."""

    def __init__(self, loading: int) -> None:
        self.loading = loading
        self.api = VllmLike(models=[MODEL])

    def __call__(self, req: Request) -> Reply:
        if req.path == "/health":
            if self.loading > 0:
                self.loading -= 1
                return Reply(503, LOADING)
            return Reply(200, b"")
        return self.api(req)


def command(*args: str, only: str = "access") -> list[str]:
    return [sys.executable, "-m", "llm_doctor", "run", "--only", only, "--format", "json", "--timeout", "10", *args]


def env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}


def report_of(out: str) -> dict[str, Any]:
    return json.loads(out)


def test_waits_through_refused_and_loading_until_the_server_is_up(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(command("--base-url", f"http://127.0.0.1:{port}/v1", "--model", MODEL, "--wait-ready", "120"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(tmp_path), cwd=tmp_path)  # fmt: skip
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # the doctor has polled once and found nothing listening
        assert first.startswith("wait-ready: ") and first.rstrip().endswith(f"http://127.0.0.1:{port}/health: connection refused"), first
        with FakeServer(Starting(loading=2), port=port):
            out, err = proc.communicate(timeout=120)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 0, err
    seen = [line.split(": ", 2)[-1] for line in (first + err).splitlines() if line.startswith("wait-ready: ")]
    assert seen[0].endswith("/health: connection refused")
    assert f"http://127.0.0.1:{port}/health: HTTP 503" in seen
    assert f"http://127.0.0.1:{port}/health: HTTP 200" in seen and f"http://127.0.0.1:{port}/v1/models: HTTP 200" in seen
    assert seen[-1].startswith("ready after ")
    report = report_of(out)
    ready = report["facts"]["ready"]
    assert ready["ready"] is True and ready["health_route"] is True
    assert [p["status"] for p in ready["seen"]] == [None, 503, 200, 200]
    check = next(c for c in report["checks"] if c["id"] == "access.ready")
    assert check["status"] == "pass" and check["detail"].startswith("ready after ")
    assert report["findings"] == []


def test_a_server_that_never_comes_up_is_not_ready_with_the_last_status_seen(tmp_path: Path) -> None:
    port = free_port()
    out = subprocess.run(command("--base-url", f"http://127.0.0.1:{port}/v1", "--model", MODEL, "--wait-ready", "2"),
                         capture_output=True, text=True, env=env(tmp_path), cwd=tmp_path, timeout=120)  # fmt: skip
    assert out.returncode == 1, out.stderr
    report = report_of(out.stdout)
    first = report["findings"][0]
    assert first["code"] == "access.not_ready"
    assert first["title"].startswith("the endpoint was not ready after ")
    assert first["title"].endswith(f"of --wait-ready 2: last seen http://127.0.0.1:{port}/health: connection refused")
    assert "no start-up log was given (--log, --docker or --k8s would show why it is not up)" in first["evidence"]
    assert [f["command"] for f in first["fixes"] if f["command"]] == ["--wait-ready 4", "--log server.log  (or --docker NAME, --k8s POD)"]
    assert "access.connect_failed" in [f["code"] for f in report["findings"][1:]]
    assert "not ready after" in out.stderr


def test_a_server_still_loading_is_not_ready_with_its_503(tmp_path: Path) -> None:
    with FakeServer(Starting(loading=10**6)) as srv:
        out = subprocess.run(command("--base-url", srv.url + "/v1", "--model", MODEL, "--wait-ready", "2"),
                             capture_output=True, text=True, env=env(tmp_path), cwd=tmp_path, timeout=120)  # fmt: skip
    report = report_of(out.stdout)
    f = next(f for f in report["findings"] if f["code"] == "access.not_ready")
    assert f["title"].endswith(f"last seen {srv.url}/health: HTTP 503")
    assert [x["command"] for x in f["fixes"]] == ["--wait-ready 4"]


def test_a_crashed_server_gives_the_crash_not_a_timeout(tmp_path: Path) -> None:
    port = free_port()
    out = subprocess.run(command("--base-url", f"http://127.0.0.1:{port}/v1", "--model", MODEL, "--wait-ready", "2", "--log", KV_LOG,
                                 only="access,load"),
                         capture_output=True, text=True, env=env(tmp_path), cwd=tmp_path, timeout=120)  # fmt: skip
    assert out.returncode == 1, out.stderr
    report = report_of(out.stdout)
    ranked = [f["code"] for f in report["findings"]]
    assert ranked[0] == "load.kv_cache_insufficient", ranked
    assert ranked.index("load.kv_cache_insufficient") < ranked.index("access.not_ready")
    not_ready = next(f for f in report["findings"] if f["code"] == "access.not_ready")
    failed = [e for e in not_ready["evidence"] if "shows the engine failed" in e]
    assert failed and "kv_cache" in failed[0] and KV_LOG in failed[0]
    assert [x["summary"] for x in not_ready["fixes"]] == ["Fix the start-up failure ranked above; the server will not come up until then"]


def test_waits_for_a_real_llama_server_that_is_starting(tmp_path: Path) -> None:
    """llama-server itself, started at the same moment as the doctor: it binds, answers 503 while it
    loads the GGUF, then 200; the key comes from --api-key-env, so it is never on a command line."""
    server = manifest_entry("llama_server", "binary")
    model = manifest_entry("gemma_gguf", "path")
    port = free_port()
    cmd = [server["binary"], "-m", model["path"], "--alias", LLAMA_ALIAS, "--host", "127.0.0.1", "--port", str(port),
           "--api-key", LLAMA_KEY, "-c", "512", "-t", "1", "--no-webui"]  # fmt: skip
    with (tmp_path / "llama.log").open("wb") as log:
        llama = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=clean_env(tmp_path),
                                 start_new_session=True)  # fmt: skip
    try:
        out = subprocess.run(command("--base-url", f"http://127.0.0.1:{port}/v1", "--model", LLAMA_ALIAS,
                                     "--api-key-env", "LLAMA_TEST_KEY", "--wait-ready", "180", "--timeout", "60"),
                             capture_output=True, text=True, env={**clean_env(tmp_path), "LLAMA_TEST_KEY": LLAMA_KEY},
                             cwd=tmp_path, timeout=300)  # fmt: skip
    finally:
        stop(llama)
    assert LLAMA_KEY not in out.stdout + out.stderr
    report = report_of(out.stdout)
    assert report["facts"]["ready"]["ready"] is True, out.stderr
    assert report["facts"]["settings"]["api_key"]["source"] == "env LLAMA_TEST_KEY (flag --api-key-env)"
    assert "access.key_on_command_line" not in [f["code"] for f in report["findings"]]
    assert out.returncode == 0, report["findings"]


def test_a_container_that_exited_ends_the_wait_at_once_with_its_crash(tmp_path: Path) -> None:
    """`--docker NAME`: between polls the doctor asks `docker inspect` whether the container died. No
    Docker daemon exists here, so `docker` is a stand-in on PATH that answers as Docker does for a
    container that exited with 1 and prints the real crash log for `docker logs`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "docker"
    fake.write_text(f'#!/bin/sh\ncase "$1" in\n  inspect) echo "exited 1" ;;\n  logs) cat "{KV_LOG}" ;;\n  *) exit 1 ;;\nesac\n')
    fake.chmod(0o755)
    port = free_port()
    out = subprocess.run(command("--base-url", f"http://127.0.0.1:{port}/v1", "--model", MODEL, "--wait-ready", "600", "--docker", "vllm",
                                 only="access,load"),
                         capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**env(tmp_path), "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"})  # fmt: skip
    assert out.returncode == 1, out.stderr
    report = report_of(out.stdout)
    ready = report["facts"]["ready"]
    assert ready["stopped"] == "container vllm exited (exit code 1)" and ready["polls"] == 1
    assert "wait-ready: container vllm exited (exit code 1)" in out.stderr
    ranked = [f["code"] for f in report["findings"]]
    assert ranked[0] == "load.kv_cache_insufficient", ranked
    not_ready = next(f for f in report["findings"] if f["code"] == "access.not_ready")
    assert not_ready["title"].startswith("--wait-ready stopped waiting after ")
    assert not_ready["title"].endswith(f"s: container vllm exited (exit code 1); last seen http://127.0.0.1:{port}/health: connection refused")


def test_a_pod_in_crash_loop_is_gone(tmp_path: Path, monkeypatch: Any) -> None:
    """`kubectl get pod -o jsonpath=...` as kubectl prints it for a crash-looping pod and a running one
    (a stand-in on PATH: no cluster here)."""
    from llm_doctor.collect.ready import container_gone

    fake = tmp_path / "kubectl"
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    fake.write_text('#!/bin/sh\necho "Running CrashLoopBackOff"\n')
    fake.chmod(0o755)
    assert container_gone(None, "vllm-0", "llm")() == "pod vllm-0 is Running (CrashLoopBackOff)"
    fake.write_text('#!/bin/sh\necho "Running "\n')
    assert container_gone(None, "vllm-0", "llm")() == ""
    assert container_gone(None, None, None)() == ""


def test_a_base_url_that_cannot_be_requested_is_not_waited_for(tmp_path: Path) -> None:
    out = subprocess.run(command("--base-url", "ftp://models.internal/v1", "--model", MODEL, "--wait-ready", "600"),
                         capture_output=True, text=True, env=env(tmp_path), cwd=tmp_path, timeout=120)  # fmt: skip
    report = report_of(out.stdout)
    assert report["facts"]["ready"]["polls"] == 1
    assert report["facts"]["ready"]["stopped"].startswith("the base URL cannot be requested (UnsupportedProtocol")
    assert "access.base_url_invalid" in [f["code"] for f in report["findings"]]
