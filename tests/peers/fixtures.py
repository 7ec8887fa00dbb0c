"""pytest fixtures that start the real peers (a LiteLLM proxy, llama.cpp's llama-server) on free
127.0.0.1 ports, and a helper that runs the real `llm-doctor` CLI against them.

tests/peers/setup.sh installs the peers and writes peers.json; these fixtures only read it. A peer
that is missing SKIPS its tests (someone ran pytest without setup), unless LLM_DOCTOR_REQUIRE_PEERS
is set, as .ci/run does: there a missing peer FAILS, so CI cannot go green by testing nothing.

Each peer is one subprocess per test session in its own process group, polled for readiness with a
bounded wait, and killed in `finally` whatever the tests did.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

LITELLM_KEY = "sk-llmdoctor-litellm-master-3f9a7c21"
LLAMA_KEY = "sk-llmdoctor-llama-key-8d41be07"
LLAMA_ALIAS = "gemma-tiny"
READY_TIMEOUT_S = 90.0  # LiteLLM is ready in 8-10 s alone; 2 shared cores under a test run are slower

LITELLM_CONFIG = """\
model_list:
  - model_name: fake-gpt
    litellm_params: {model: openai/fake-gpt, api_key: sk-upstream-fake, mock_response: "Hello"}
  - model_name: rate-limited
    litellm_params: {model: openai/rl, api_key: sk-upstream-fake, mock_response: "litellm.RateLimitError"}
  - model_name: dead-upstream
    litellm_params: {model: openai/dead, api_base: "http://127.0.0.1:1/v1", api_key: x, num_retries: 0, timeout: 5}
general_settings: {master_key: %(key)s, custom_auth: test_auth.user_api_key_auth}
litellm_settings: {num_retries: 0, request_timeout: 10}
"""

# Without a database LiteLLM answers a wrong key with 400 "No connected db."; this hook (LiteLLM's
# documented custom_auth interface) makes it answer the real gateway 401 instead.
LITELLM_AUTH = """\
from fastapi import HTTPException
from litellm.proxy._types import UserAPIKeyAuth


async def user_api_key_auth(request, api_key: str) -> UserAPIKeyAuth:
    if api_key == %(key)r:
        return UserAPIKeyAuth(api_key=api_key)
    raise HTTPException(status_code=401, detail="Invalid API key")
"""


@dataclass
class Peer:
    """A running peer: where it listens, the key it wants, and where its own log goes."""

    origin: str  # http://127.0.0.1:PORT
    key: str
    log: Path
    version: str

    @property
    def v1(self) -> str:
        return self.origin + "/v1"

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def peers_root() -> Path:
    return Path(os.environ.get("LLM_DOCTOR_PEERS") or Path.home() / ".cache" / "llm-doctor-peers")


def missing(reason: str) -> None:
    """Skip, or fail when CI demands the peers."""
    hint = f"{reason}; run `bash tests/peers/setup.sh` first"
    if os.environ.get("LLM_DOCTOR_REQUIRE_PEERS"):
        pytest.fail(f"LLM_DOCTOR_REQUIRE_PEERS is set but {hint}", pytrace=False)
    pytest.skip(hint)


def manifest_entry(name: str, path_key: str) -> dict[str, str]:
    manifest = peers_root() / "peers.json"
    if not manifest.is_file():
        missing(f"no {manifest}")
    entry = json.loads(manifest.read_text()).get(name) or {}
    path = entry.get(path_key)
    if not path or not Path(path).exists():
        missing(f"{name} is not installed ({path_key}={path!r} in {manifest})")
    return entry


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(
    cmd: list[str], ready_url: str, log: Path, cwd: Path, env: dict[str, str] | None = None
) -> Iterator[None]:
    """Start `cmd`, wait until `ready_url` answers 200, and always kill its whole process group."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        wait_ready(proc, ready_url, log)
        yield
    finally:
        stop(proc)


def wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(
                    f"{proc.args[0]} exited with {proc.returncode} before it was ready:\n{_tail(log)}",
                    pytrace=False,
                )
            with contextlib.suppress(httpx.HTTPError):
                if client.get(url).status_code == 200:
                    return
            time.sleep(0.25)
    pytest.fail(f"{url} not ready after {READY_TIMEOUT_S:.0f} s:\n{_tail(log)}", pytrace=False)


def stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"


def clean_env(home: Path) -> dict[str, str]:
    """The environment for peers and the CLI: no proxies (they apply to 127.0.0.1 too), no client
    settings or keys from the developer's shell, and a private HOME with no client config files."""
    drop = ("PROXY", "OPENAI_", "ANTHROPIC_", "LITELLM_", "CODEX_", "HF_TOKEN")
    env = {k: v for k, v in os.environ.items() if not any(d in k.upper() for d in drop)}
    env.update(HOME=str(home), NO_COLOR="1", LITELLM_LOCAL_MODEL_COST_MAP="True")
    return env


@contextlib.contextmanager
def start_litellm(work: Path, custom_auth: bool = True) -> Iterator[Peer]:
    """A LiteLLM proxy in `work` with the mock models; without `custom_auth` it has only a master
    key and no database, the set-up in which LiteLLM answers a wrong key with 400 "No connected db."."""
    entry = manifest_entry("litellm", "python")
    config = LITELLM_CONFIG % {"key": LITELLM_KEY}
    if not custom_auth:
        config = config.replace(", custom_auth: test_auth.user_api_key_auth", "")
    (work / "config.yaml").write_text(config)
    (work / "test_auth.py").write_text(LITELLM_AUTH % {"key": LITELLM_KEY})
    port = free_port()
    litellm = str(Path(entry["python"]).parent / "litellm")
    cmd = [litellm, "--config", str(work / "config.yaml"), "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]  # fmt: skip
    env = clean_env(work) | {"PYTHONPATH": str(work)}
    peer = Peer(f"http://127.0.0.1:{port}", LITELLM_KEY, work / "litellm.log", entry["version"])
    with running(cmd, peer.origin + "/health/liveliness", peer.log, work, env):
        yield peer


@pytest.fixture(scope="session")
def litellm_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    with start_litellm(tmp_path_factory.mktemp("litellm")) as peer:
        yield peer


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    server = manifest_entry("llama_server", "binary")
    model = manifest_entry("gemma_gguf", "path")
    work = tmp_path_factory.mktemp("llama")
    port = free_port()
    # One thread: ggml's threads spin at a barrier, so with 2 threads on 2 cores shared with pytest and
    # the CLI a token took 0.4-1.7 s here instead of 0.03 s; 1 thread degrades gracefully (28 tokens/s).
    cmd = [
        server["binary"], "-m", model["path"], "--alias", LLAMA_ALIAS, "--host", "127.0.0.1", "--port", str(port),
        "--api-key", LLAMA_KEY, "-c", "1024", "-t", "1", "--metrics", "--no-webui",
    ]  # fmt: skip
    peer = Peer(f"http://127.0.0.1:{port}", LLAMA_KEY, work / "llama-server.log", server["version"])
    with running(cmd, peer.origin + "/health", peer.log, work, clean_env(work)):
        yield peer


@dataclass
class DoctorRun:
    rc: int
    stdout: str
    stderr: str
    report: dict[str, Any]

    @property
    def findings(self) -> list[dict[str, Any]]:
        return self.report.get("findings") or []

    def codes(self) -> list[str]:
        return [f["code"] for f in self.findings]


# `run` against a real peer on 2 cores busy with the rest of the suite: a request that takes 30 ms
# alone can take seconds, so the per-request and overall bounds are far above any real answer time
# (a test about time-outs passes its own --timeout, which comes later and wins).
RUN_BOUNDS = ["--timeout", "60", "--deadline", "180"]


def doctor(args: list[str], home: Path, timeout: float = 220.0, fmt: str = "json") -> DoctorRun:
    """Run the installed `llm-doctor` entry point as a user would; the report is parsed for json."""
    exe = Path(sys.executable).with_name("llm-doctor")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "llm_doctor"]
    if args[:1] == ["run"]:
        args = ["run", *RUN_BOUNDS, *args[1:]]
    proc = subprocess.run(
        [*cmd, *args, "--format", fmt], env=clean_env(home), cwd=home, capture_output=True, text=True,
        timeout=timeout, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if fmt != "json":
        return DoctorRun(proc.returncode, proc.stdout, proc.stderr, {})
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"stdout is not JSON (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        ) from None
    return DoctorRun(proc.returncode, proc.stdout, proc.stderr, report)


def access_run(peer: Peer, home: Path, base: str, model: str, key: str | None, *extra: str,
               secrets: tuple[str, ...] = (), fmt: str = "json") -> DoctorRun:
    """`llm-doctor run --only access` against a peer; no key given to it may reach stdout or stderr."""
    args = ["run", "--only", "access", "--base-url", base, "--api-key", key or peer.key, "--model", model, *extra]
    run = doctor(args, home, fmt=fmt)
    for secret in (peer.key, *secrets):
        assert secret not in run.stdout, f"a key reached stdout:\n{run.stdout}"
        assert secret not in run.stderr, f"a key reached stderr:\n{run.stderr}"
    return run
