"""Canary secrets in every shape the redactor must catch, planted where a real run meets them, then
searched for in every output format, the --output file and the --save-bundle file.

Where they are planted: a 401 body that echoes a truncated copy of the key (32 of its 43
characters) many times and quotes secret flags and URLs with key-like query parameters; the base
URL's own query string; a live engine process whose command line carries `--api_key V`,
`--api-key=V`, `--hf_token V` and `--token V`; an engine log with an argparse error naming
`--api_key V`. None of the canaries has a provider key shape, so no shape pattern can hide a miss."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_engine import fake_engine
from tests.servers.http import FakeServer, Reply, Request

KEY = "ck_live_9fT2mQ7xLp4RzW8vNb3HsJ6kYd1GcE5auV0"  # 43 characters, the key the doctor is given
assert len(KEY) == 43
FLAGS = {  # planted as `--flag value` (or `--flag=value`) on command lines and in bodies
    "--api_key": "cnry-underscore-flag-7Q2x9Lm4",
    "--api-key=": "cnry-equals-flag-3Kd8Wp1Zt6",
    "--hf_token": "cnry-hf-token-flag-5Rb2Yv9Qe",
    "--token": "cnry-bare-token-flag-8Hn4Xc7",
}
PROCESS_FLAGS = {flag: value.replace("cnry-", "cnry-proc-") for flag, value in FLAGS.items()}
QUERY = {name: f"cnry-q-{name}-4Tz8" for name in ("key", "api_key", "apikey", "token", "access_token", "sig", "signature")}
URL_KEY = "cnry-base-url-key-6Mv3"
LOG_KEY = "cnry-argparse-error-2Wq9"
CANARIES = [*FLAGS.values(), *PROCESS_FLAGS.values(), *QUERY.values(), URL_KEY, LOG_KEY]


def argv_of(flags: dict[str, str]) -> list[str]:
    out: list[str] = []
    for flag, value in flags.items():
        out += [flag + value] if flag.endswith("=") else [flag, value]
    return out


def leaks(text: str) -> list[str]:
    """Every canary found, and every 8-character piece of the key (its masked form shows 3 + 4)."""
    found = [c for c in CANARIES if c in text]
    found += [KEY[i : i + 8] for i in range(len(KEY) - 7) if KEY[i : i + 8] in text]
    return found


def echoing_401(req: Request) -> Reply:
    """A gateway that rejects the key and says too much about it."""
    query = "&".join(f"{k}={v}" for k, v in QUERY.items())
    message = " ".join([f"Incorrect API key provided: {KEY[:32]}..."] * 20)
    message += f" (upstream started with {' '.join(argv_of(FLAGS))}; docs: https://gw.example/keys?{query})"
    return Reply(401, {"error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}})


@pytest.fixture
def gateway() -> Iterator[FakeServer]:
    with FakeServer(echoing_401) as srv:
        yield srv


@pytest.fixture
def engine_process(tmp_path: Path) -> Iterator[subprocess.Popen]:
    """A real process named vllm with the secret flags on its command line, as `ps` shows it."""
    with fake_engine(tmp_path / "bin" / "vllm", ["serve", "org/model", "--port", "8000", *argv_of(PROCESS_FLAGS)]) as proc:
        yield proc


def test_a_live_engine_process_command_line_is_redacted(engine_process: subprocess.Popen) -> None:
    from llm_doctor.collect import host

    (ep,) = [p for p in host.engine_processes() if p.pid == engine_process.pid]
    assert ep.engine == "vllm" and "serve org/model --port 8000 --api_key " in ep.cmdline
    assert leaks(repr(ep)) == []


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html", "junit"])
def test_no_canary_in_any_output(tmp_path: Path, gateway: FakeServer, engine_process: subprocess.Popen, fmt: str) -> None:
    log = tmp_path / "engine.log"
    log.write_text(
        "usage: vllm serve [-h] [--api-key API_KEY] model_tag\n"
        f"vllm serve: error: unrecognized arguments: --api_key {LOG_KEY}\n"
    )
    report, bundle = tmp_path / f"report.{fmt}", tmp_path / "bundle.json"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    base = f"{gateway.url}/v1?key={URL_KEY}"
    cmd = [sys.executable, "-m", "llm_doctor", "run", "--format", fmt, "--timeout", "3", "--deadline", "30", "--sample", "0.2",
           "--base-url", base, "--api-key", KEY, "--model", "m", "--log", str(log), "-o", str(report), "--save-bundle", str(bundle)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr
    written = {"stdout": out.stdout, "stderr": out.stderr, "--output": report.read_text(), "--save-bundle": bundle.read_text()}
    assert {where: leaks(text) for where, text in written.items()} == {where: [] for where in written}
    assert out.returncode == 1
    facts = json.loads(written["--save-bundle"])
    (step,) = [s for s in facts["endpoint"]["steps"] if s["step"] == "models"]
    assert step["status"] == 401 and "Incorrect API key provided: ****" in step["body_excerpt"]
    assert any(p["pid"] == engine_process.pid for p in facts["host"]["processes"])
    if fmt == "json":
        codes = [f["code"] for f in json.loads(written["--output"])["findings"]]
        assert codes[:2] == ["access.base_url_invalid", "access.key_rejected"]  # the ?key= in the URL, then the 401


def test_a_usage_error_does_not_quote_a_key_pasted_with_a_space(tmp_path: Path) -> None:
    """`--api-key ck_live_9fT2 mQ7x...` unquoted: click's "unexpected extra argument" quotes the rest."""
    head, tail = KEY[:12], KEY[12:]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "llm_doctor", "run", "--api-key", head, tail], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=60)  # fmt: skip
    assert out.returncode == 2 and "Error: Got unexpected extra argument (" in out.stderr
    assert leaks(out.stdout + out.stderr) == [] and tail not in out.stderr


@pytest.mark.parametrize("same_origin", [True, False])
def test_the_api_key_goes_to_metrics_only_on_its_own_origin(tmp_path: Path, same_origin: bool) -> None:
    """llama-server guards /metrics with the API key: sent when /metrics is on the base URL's
    origin; a --metrics-url on another port of the same host gets no key."""
    scrape = Reply(200, b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n", "text/plain")
    with FakeServer(lambda req: scrape) as metrics_srv, FakeServer(lambda req: scrape) as api:
        base = (metrics_srv if same_origin else api).url + "/v1"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
        cmd = [sys.executable, "-m", "llm_doctor", "run", "--only", "perf", "--format", "json", "--sample", "0.2", "--timeout", "3",
               "--deadline", "20", "--base-url", base, "--api-key", KEY, "--metrics-url", metrics_srv.url + "/metrics"]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=90)
    assert "Traceback" not in out.stderr and leaks(out.stdout + out.stderr) == []
    sent = [r.headers.get("authorization") for r in metrics_srv.requests if r.path == "/metrics"]
    assert sent and set(sent) == ({f"Bearer {KEY}"} if same_origin else {None})


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html", "junit"])
def test_no_canary_from_saved_files_in_any_output(tmp_path: Path, fmt: str) -> None:
    """`analyze` of a launch command and an engine log that carry the secrets in every shape."""
    launch = tmp_path / "launch.sh"
    launch.write_text("vllm serve org/model --port 8000 \\\n  " + " \\\n  ".join(argv_of(FLAGS)) + "\n")
    query = "&".join(f"{k}={v}" for k, v in QUERY.items())
    log = tmp_path / "engine.log"
    log.write_text(
        f"INFO 05-01 10:00:00 api_server.py:712] args: Namespace(model='org/model', api_key='{LOG_KEY}')\n"
        f"vllm serve: error: unrecognized arguments: --api_key {LOG_KEY}\n"
        f"WARNING 05-01 10:00:01 client.py:12] GET https://hub.example/org/model?{query} failed\n"
    )
    report, bundle = tmp_path / f"report.{fmt}", tmp_path / "bundle.json"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "llm_doctor", "analyze", str(launch), str(log), "--format", fmt, "-o", str(report), "--save-bundle", str(bundle)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr
    written = {"stdout": out.stdout, "stderr": out.stderr, "--output": report.read_text(), "--save-bundle": bundle.read_text()}
    assert {where: leaks(text) for where, text in written.items()} == {where: [] for where in written}
    assert json.loads(written["--save-bundle"])["deployment"]["engine"] == "vllm"
