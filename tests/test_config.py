"""The pipeline's configuration (llm-doctor.toml, [tool.llm-doctor] in pyproject.toml, --config):
requirements judged as findings with their own codes, flags over the file, where every value
came from, ignored codes with their reasons, and a clear usage error (exit 2) for a bad file.

The gate's figures come from `plan` (Llama-3.1-8B on one H100 at 32,768 tokens: 449,920 KV cache
tokens, 13.73 requests at once, from the shipped model table) and from a real vLLM log
(fixtures/logs/vllm-0.8.4-...: "GPU KV cache size: 305,216 tokens")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.servers.http import FakeServer, Reply, Request
from tests.servers.openai_like import VllmLike

PLAN = ["plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100", "--max-model-len", "32768", "--offline"]
RAY_LOG = str(ROOT / "fixtures" / "logs" / "vllm-0.8.4-v1-ray-tp16-cgraph-channel-timeout.log")


def doctor(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any] | None, str]:
    """Run the CLI in `cwd` with a clean environment; (exit code, the JSON report or None, stderr)."""
    clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), **(env or {})}
    out = subprocess.run([sys.executable, "-m", "llm_doctor", *args], capture_output=True, text=True, env=clean, cwd=cwd, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr
    try:
        report = json.loads(out.stdout)
    except ValueError:
        report = None
    return out.returncode, report, out.stderr


def codes(report: dict[str, Any]) -> list[str]:
    return [f["code"] for f in report["findings"]]


def values(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {v["name"]: (v["value"], v["source"]) for v in report["facts"]["gate"]["values"]}


def test_plan_fails_the_gate_below_the_kv_requirement_and_passes_above(tmp_path: Path) -> None:
    (tmp_path / "llm-doctor.toml").write_text("[requirements]\nmin_kv_cache_tokens = 500000\n")
    rc, report, _ = doctor(tmp_path, *PLAN, "--format", "json")
    assert rc == 1 and codes(report) == ["gate.kv_cache_tokens_below"]
    finding = report["findings"][0]
    assert finding["title"] == "the KV cache holds 449,920 tokens; the gate requires at least 500,000"
    assert "min_kv_cache_tokens = 500,000 (llm-doctor.toml)" in finding["evidence"]
    assert finding["fixes"][0]["summary"].startswith("Give the KV cache 1.11x the memory it has now")

    (tmp_path / "llm-doctor.toml").write_text("[requirements]\nmin_kv_cache_tokens = 400000\nmin_concurrency = 12\n")
    rc, report, _ = doctor(tmp_path, *PLAN, "--format", "json")
    assert rc == 0 and codes(report) == []
    gate = next(c for c in report["checks"] if c["id"] == "gate.requirements")
    assert gate["status"] == "pass"
    assert gate["detail"] == "KV cache tokens 449,920 >= 400,000; concurrency 13.73 >= 12 at 32,768 tokens"


def test_concurrency_at_a_context_length_from_a_real_engine_log(tmp_path: Path) -> None:
    (tmp_path / "llm-doctor.toml").write_text("[requirements]\nmin_concurrency = 10\ncontext_length = 32768\n")
    rc, report, _ = doctor(tmp_path, "analyze", RAY_LOG, "--format", "json")
    assert rc == 1
    f = next(f for f in report["findings"] if f["code"] == "gate.concurrency_below")
    assert f["title"] == "9.31 requests of 32,768 tokens fit the KV cache at once; the gate requires 10"
    assert f["evidence"][0].startswith("KV cache tokens 305,216 (engine log ")
    assert {"summary": "Or require less context per request: 30,521 tokens give 10 at once", "command": "--max-model-len 30521"} in f["fixes"]


def test_a_requirement_without_its_figure_is_unmeasured_not_passed(tmp_path: Path) -> None:
    (tmp_path / "llm-doctor.toml").write_text("[requirements]\nmax_ttft_ms = 500\nmax_gpu_memory_fraction = 0.9\n")
    rc, report, _ = doctor(tmp_path, *PLAN, "--format", "json")
    assert rc == 1
    assert codes(report) == ["gate.requirement_unmeasured", "gate.requirement_unmeasured"]
    assert "needs the load probe: add --probe-load 4 (or probe_load = 4 in the configuration)" in report["findings"][0]["evidence"]


def test_pyproject_table_is_read_and_config_flag_wins_over_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.llm-doctor]\nfail_on = "never"\n[tool.llm-doctor.requirements]\nmin_kv_cache_tokens = 500000\n')
    rc, report, _ = doctor(tmp_path, *PLAN, "--format", "json")
    assert rc == 0 and codes(report) == ["gate.kv_cache_tokens_below"]  # found, and fail_on = never from the file
    assert report["facts"]["gate"]["config_file"] == "pyproject.toml [tool.llm-doctor]"
    assert values(report)["fail_on"] == ("never", "file pyproject.toml [tool.llm-doctor]")

    other = tmp_path / "ci" / "gate.toml"
    other.parent.mkdir()
    other.write_text("[requirements]\nmin_kv_cache_tokens = 100000\n")
    rc, report, _ = doctor(tmp_path, *PLAN, "--config", str(other), "--format", "json")
    assert rc == 0 and codes(report) == []
    assert report["facts"]["gate"]["requirements"] == {"min_kv_cache_tokens": 100000}


def test_flags_override_the_file_and_the_report_says_where_each_value_came_from(tmp_path: Path) -> None:
    (tmp_path / "llm-doctor.toml").write_text('fail_on = "error"\ndeadline = 30\n[requirements]\nmin_kv_cache_tokens = 500000\n')
    rc, report, _ = doctor(tmp_path, *PLAN, "--fail-on", "never", "--format", "json")
    assert rc == 0  # the flag, not the file
    v = values(report)
    assert v["fail_on"] == ("never", "flag --fail-on")
    assert v["deadline"] == ("30.0", "file llm-doctor.toml")
    assert v["requirements.min_kv_cache_tokens"] == ("500000", "file llm-doctor.toml")
    out = subprocess.run([sys.executable, "-m", "llm_doctor", *PLAN, "--fail-on", "never"], capture_output=True, text=True,
                         cwd=tmp_path, env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)}, timeout=120).stdout  # fmt: skip
    assert "Configuration (llm-doctor.toml)" in out
    assert "fail_on = never  (flag --fail-on)" in out and "deadline = 30.0  (file llm-doctor.toml)" in out


def test_endpoint_model_and_key_variable_from_the_file_rank_above_the_environment(tmp_path: Path) -> None:
    (tmp_path / "llm-doctor.toml").write_text('endpoint = "http://127.0.0.1:9/v1"\nmodel = "m1"\napi_key_env = "GATE_KEY"\n')
    env = {"OPENAI_BASE_URL": "http://10.9.9.9/v1", "OPENAI_API_KEY": "sk-from-openai-env-000000", "GATE_KEY": "sk-gate-key-0123456789"}
    rc, report, _ = doctor(tmp_path, "run", "--only", "access", "--timeout", "1", "--format", "json", env=env)
    s = report["facts"]["settings"]
    assert s["base_url"] == {"value": "http://127.0.0.1:9/v1", "source": "file llm-doctor.toml endpoint"}
    assert s["model"] == {"value": "m1", "source": "file llm-doctor.toml model"}
    assert s["api_key"]["source"] == "env GATE_KEY (file llm-doctor.toml api_key_env)"
    assert "sk-gate-key-0123456789" not in json.dumps(report)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("requirments = 1\n", "llm-doctor.toml: unknown key 'requirments'; the closest valid key is 'requirements'"),
        ("[requirements]\nmin_kv_tokens = 1\n", "unknown key 'requirements.min_kv_tokens'; the closest valid key is 'min_kv_cache_tokens'"),
        ("deadline = -1\n", "llm-doctor.toml: deadline: -1 must be above 0 and at most 86400 seconds"),
        ('fail_on = "sometimes"\n', "llm-doctor.toml: fail_on: 'sometimes' is not one of 'error', 'warn', 'never'."),
        ("[requirements]\nmax_gpu_memory_fraction = 1.5\n", "requirements.max_gpu_memory_fraction: expected a number above 0 and at most 1, got 1.5"),
        ("[requirements]\nmin_kv_cache_tokens = 1.5\n", "expected a whole number above 0 and at most 1e+12, got 1.5"),
        ('[ignore]\n"perf.low_gpu_util" = ""\n', 'ignore: perf.low_gpu_util needs a reason'),
        ('[ignore]\n"perf.low_gpu_utilisation" = "x"\n', "unknown finding code 'perf.low_gpu_utilisation'; the closest valid key is 'perf.low_gpu_util'"),
        ('[ignore]\n"doctor.input_incomplete" = "x"\n', "doctor.input_incomplete cannot be ignored"),
        ("endpoint = [\n", "llm-doctor.toml: not valid TOML"),
    ],
)
def test_a_bad_configuration_is_a_usage_error_naming_the_key(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "llm-doctor.toml").write_text(toml)
    rc, _, err = doctor(tmp_path, *PLAN, "--format", "json")
    assert rc == 2
    assert message in err


def test_ignored_codes_leave_the_findings_and_the_gate_with_their_reason(tmp_path: Path) -> None:
    (tmp_path / "llm-doctor.toml").write_text('[requirements]\nmin_kv_cache_tokens = 500000\n[ignore]\n"gate.kv_cache_tokens_below" = "accepted until the H200s arrive (OPS-12)"\n')
    rc, report, _ = doctor(tmp_path, *PLAN, "--format", "json")
    assert rc == 0 and codes(report) == [] and report["status"] == "ok"
    assert report["ignored"] == [{"code": "gate.kv_cache_tokens_below", "severity": "error", "check": "gate.requirements",
                                  "title": "the KV cache holds 449,920 tokens; the gate requires at least 500,000",
                                  "reason": "accepted until the H200s arrive (OPS-12)"}]  # fmt: skip
    gate = next(c for c in report["checks"] if c["id"] == "gate.requirements")
    assert gate["status"] == "pass" and "ignored by the configuration: gate.kv_cache_tokens_below" in gate["detail"]
    out = subprocess.run([sys.executable, "-m", "llm_doctor", *PLAN], capture_output=True, text=True, cwd=tmp_path,
                         env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)}, timeout=120).stdout  # fmt: skip
    assert "Ignored by the configuration" in out and "reason: accepted until the H200s arrive (OPS-12)" in out


def test_no_configuration_leaves_the_report_as_it_was(tmp_path: Path) -> None:
    rc, report, _ = doctor(tmp_path, *PLAN, "--format", "json")
    assert rc == 0 and report["facts"]["gate"] is None and "ignored" not in report


def test_a_key_flag_replaces_the_files_way_to_the_key(tmp_path: Path) -> None:
    (tmp_path / "llm-doctor.toml").write_text('endpoint = "http://127.0.0.1:9/v1"\napi_key_env = "GATE_KEY"\n')
    (tmp_path / "key").write_text("sk-from-file-0123456789\n")
    rc, report, _ = doctor(tmp_path, "run", "--only", "access", "--timeout", "1", "--format", "json", "--api-key-file", "key",
                           env={"GATE_KEY": "sk-gate-key-0123456789"})  # fmt: skip
    assert report["facts"]["settings"]["api_key"]["source"] == "file key (flag --api-key-file)"
    assert ("key", "flag --api-key-file") in values(report).values()


class WithMetrics(VllmLike):
    """vLLM's API plus its /metrics (a real scrape: 81,767 GPU blocks of 16 tokens = 1,308,272 tokens)."""

    def __call__(self, req: Request) -> Reply:
        if req.path == "/metrics":
            return Reply(200, (ROOT / "fixtures" / "metrics" / "vllm-v0-metrics-excerpt-cache-config-info-aibrix.txt").read_bytes(),
                         content_type="text/plain; version=0.0.4")  # fmt: skip
        return super().__call__(req)


@pytest.mark.parametrize(
    ("model", "min_kv", "rc", "failing"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", 1_000_000, 0, []),
        ("meta-llama/Llama-3.1-8B-Instruct", 1_500_000, 1, ["gate.kv_cache_tokens_below"]),
        ("meta-llama/Llama-3.1-8B", 1_000_000, 1, ["access.model_not_found"]),
    ],
)
def test_a_pipeline_gate_against_a_live_server(tmp_path: Path, model: str, min_kv: int, rc: int, failing: list[str]) -> None:
    """The gate as a pipeline runs it: only a config file and the key in a variable; a planted problem
    (a KV cache below the requirement, a wrong model) fails it, and it passes without one."""
    key = "sk-pipeline-0123456789abcdef"
    with FakeServer(WithMetrics(key=key, models=["meta-llama/Llama-3.1-8B-Instruct"])) as srv:
        (tmp_path / "llm-doctor.toml").write_text(
            f'endpoint = "{srv.url}/v1"\nmodel = "{model}"\napi_key_env = "SERVING_KEY"\nwait_ready = 60\n'
            f'only = ["access", "perf"]\n\n[requirements]\nmin_kv_cache_tokens = {min_kv}\n'
        )
        code, report, err = doctor(tmp_path, "run", "--format", "json", env={"SERVING_KEY": key})
    assert code == rc, report["findings"]
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == failing
    assert report["facts"]["ready"]["ready"] is True and "wait-ready: ready after" in err
    if "gate.kv_cache_tokens_below" in failing:
        assert report["findings"][0]["title"] == "the KV cache holds 1,308,272 tokens; the gate requires at least 1,500,000"
    assert key not in json.dumps(report) + err


def test_wait_ready_without_an_endpoint_is_a_usage_error(tmp_path: Path) -> None:
    rc, _, err = doctor(tmp_path, "run", "--only", "access", "--wait-ready", "5")
    assert rc == 2 and "--wait-ready needs the endpoint: --base-url, or `endpoint` in llm-doctor.toml" in err
