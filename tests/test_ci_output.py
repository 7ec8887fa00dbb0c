"""What a CI system reads: JUnit validated against the Jenkins/Ant schema (tests/schemas/junit-10.xsd,
by xmlschema) and agreeing with the exit code for every --fail-on; GitHub workflow annotations and
the job summary when GITHUB_ACTIONS=true; GitLab Code Quality JSON; and the key kept off the
command line (--api-key-env, --api-key-file, a warning for --api-key), against a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import xmlschema

from llm_doctor.engine import CheckResult
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix
from llm_doctor.redact import Redactor, mask
from llm_doctor.report import build_report
from llm_doctor.report.render import render
from tests.conftest import ROOT
from tests.servers.http import FakeServer
from tests.servers.openai_like import VllmLike

SCHEMA = xmlschema.XMLSchema(ROOT / "tests" / "schemas" / "junit-10.xsd")
KV_LOG = str(ROOT / "fixtures" / "logs" / "vllm-0.4.1-a10g-mistral7b-kv-cache-insufficient.log")
KEY = "sk-canary-ci-0123456789abcdefXYZ"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def doctor(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), **(env or {})}
    out = subprocess.run([sys.executable, "-m", "llm_doctor", *args], capture_output=True, text=True, env=clean, cwd=cwd, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr
    return out


def valid_junit(text: str) -> ET.Element:
    errors = [f"{e.reason} at {e.path}" for e in SCHEMA.iter_errors(text)]
    assert errors == [], errors
    return ET.fromstring(text)


@pytest.mark.parametrize("fail_on", ["error", "warn", "never"])
def test_junit_of_a_real_crash_log_is_valid_and_agrees_with_the_exit_code(tmp_path: Path, fail_on: str) -> None:
    out = doctor(tmp_path, "analyze", KV_LOG, "--format", "junit", "--fail-on", fail_on)
    suite = valid_junit(out.stdout)
    failing = int(suite.get("failures")) + int(suite.get("errors"))
    assert out.returncode == (1 if failing else 0)
    assert (out.returncode == 1) == (fail_on != "never")
    if fail_on != "never":
        failure = suite.find("testcase[@name='load.kv_cache']/failure")
        assert failure is not None and "load.kv_cache_insufficient" in failure.text


def test_junit_with_terminal_escapes_and_control_bytes_still_parses_and_validates() -> None:
    finding = Finding("load.runtime_oom", "CUDA out of memory \x1b[31mred\x1b[0m", ["line with a NUL \x00 and \x07 bell"],
                      [Fix("lower it", "--gpu-memory-utilization 0.85")], check="load.gpu_oom")  # fmt: skip
    report = build_report([CheckResult("load.gpu_oom", "load", "fail", 2.0, "oom \x1b[0m", [finding])], Facts())
    suite = valid_junit(render(report, "junit", Redactor()))
    text = suite.find("testcase/failure").text
    assert "\x1b" not in text and "\x00" not in text and "CUDA out of memory" in text


def test_github_annotations_and_step_summary(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    out = doctor(tmp_path, "analyze", KV_LOG, "--format", "json", env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert out.returncode == 1
    report = json.loads(out.stdout)  # stdout stays the report
    top = report["findings"][0]
    lines = [line for line in out.stderr.splitlines() if line.startswith("::")]
    assert len(lines) == len(report["findings"])
    first = lines[0]
    assert first.startswith(f"::error title=llm-doctor {top['code']}::{top['title']}%0A")
    assert "%0AFix: Lower the context length to what fits (16864 tokens): --max-model-len 16864" in first
    assert "\n" not in first
    text = summary.read_text()
    assert text.startswith("earlier step\n# llm-doctor analyze report")
    assert "### 1. `load.kv_cache_insufficient` (error)" in text


def test_no_annotations_outside_github_actions(tmp_path: Path) -> None:
    out = doctor(tmp_path, "analyze", KV_LOG, "--format", "json")
    assert not [line for line in out.stderr.splitlines() if line.startswith("::")]


def test_gitlab_code_quality_report(tmp_path: Path) -> None:
    out = doctor(tmp_path, "analyze", KV_LOG, "--format", "codequality")
    issues = json.loads(out.stdout)
    assert out.returncode == 1 and issues
    for issue in issues:
        assert {"description", "check_name", "fingerprint", "severity", "location"} <= set(issue)
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert issue["location"]["path"] == KV_LOG and issue["location"]["lines"]["begin"] == 1
    assert issues[0]["check_name"] == "load.kv_cache_insufficient" and issues[0]["severity"] == "critical"
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    (tmp_path / "llm-doctor.toml").write_text("[requirements]\nmin_kv_cache_tokens = 1\n")
    issues = json.loads(doctor(tmp_path, "analyze", KV_LOG, "--format", "codequality").stdout)
    assert {i["location"]["path"] for i in issues} == {"llm-doctor.toml"}


@pytest.fixture
def vllm() -> Any:
    with FakeServer(VllmLike(key=KEY, models=[MODEL])) as srv:
        yield srv


def access(tmp_path: Path, srv: FakeServer, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    out = doctor(tmp_path, "run", "--only", "access", "--format", "json", "--timeout", "10",
                 "--base-url", srv.url + "/v1", "--model", MODEL, *args, env=env)  # fmt: skip
    assert KEY not in out.stdout + out.stderr
    return out, json.loads(out.stdout)


def test_a_key_on_the_command_line_is_a_warning_with_the_fix(tmp_path: Path, vllm: FakeServer) -> None:
    out, report = access(tmp_path, vllm, "--api-key", KEY)
    assert out.returncode == 0
    assert [f["code"] for f in report["findings"]] == ["access.key_on_command_line"]
    f = report["findings"][0]
    assert f["severity"] == "warn" and f["evidence"] == [f"key {mask(KEY)} from flag --api-key"]
    assert [x["command"] for x in f["fixes"]] == ["--api-key-env OPENAI_API_KEY", "--api-key-file /run/secrets/llm-api-key"]


def test_key_from_a_named_variable_or_a_file(tmp_path: Path, vllm: FakeServer) -> None:
    out, report = access(tmp_path, vllm, "--api-key-env", "SERVING_KEY", env={"SERVING_KEY": KEY})
    assert out.returncode == 0 and report["findings"] == []
    assert report["facts"]["settings"]["api_key"]["source"] == "env SERVING_KEY (flag --api-key-env)"
    secret = tmp_path / "key"
    secret.write_text(KEY + "\n")  # as `echo` and Kubernetes secrets write it
    out, report = access(tmp_path, vllm, "--api-key-file", str(secret))
    assert out.returncode == 0 and report["findings"] == []
    assert report["facts"]["settings"]["api_key"]["source"] == f"file {secret} (flag --api-key-file)"


def test_a_named_variable_that_is_not_set_says_so(tmp_path: Path, vllm: FakeServer) -> None:
    out, report = access(tmp_path, vllm, "--api-key-env", "NOT_SET_ANYWHERE", env={"OPENAI_API_KEY": "sk-not-this-one-0000000"})
    f = report["findings"][0]
    assert f["code"] == "access.key_missing"
    assert f["evidence"][0] == "no key: env NOT_SET_ANYWHERE (flag --api-key-env), which is not set"


def test_an_unreadable_key_file_is_a_usage_error(tmp_path: Path, vllm: FakeServer) -> None:
    out = doctor(tmp_path, "run", "--only", "access", "--base-url", vllm.url + "/v1", "--api-key-file", str(tmp_path / "nope"))
    assert out.returncode == 2
    assert f"--api-key-file {tmp_path / 'nope'}: cannot read the key (No such file or directory)" in out.stderr



def test_the_key_warning_ranks_after_the_services_own_warnings() -> None:
    from llm_doctor.report import rank

    hygiene = Finding("access.key_on_command_line", "key on the command line", check="access.key_source")
    service = [Finding("access.model_not_found", "any name answered", severity="warn", check="access.model"),
               Finding("perf.low_gpu_util", "idle GPUs", check="perf.gpu_utilization")]  # fmt: skip
    assert [f.code for f in rank([hygiene, *service])] == ["access.model_not_found", "perf.low_gpu_util", "access.key_on_command_line"]
