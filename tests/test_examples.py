"""The CI examples under examples/ are real files: each parses, carries the keys its system requires,
uses the configuration file and --wait-ready, and every `llm-doctor` command line in it is one the
CLI accepts (parsed by click, not run); each configuration it holds loads without a usage error."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from llm_doctor.cli import main
from tests.conftest import ROOT

EXAMPLES = ROOT / "examples"


def load(name: str) -> list[Any]:
    return [doc for doc in yaml.safe_load_all((EXAMPLES / name).read_text()) if doc is not None]


def doctor_lines(texts: list[str]) -> list[list[str]]:
    """Every `llm-doctor ...` invocation in the given shell snippets, as argv (after `exec` or `&&`)."""
    out = []
    for text in texts:
        for part in re.split(r"&&|\n(?=\S)|;", text):
            words = shlex.split(part.strip())
            words = words[1:] if words[:1] == ["exec"] else words
            if words[:1] == ["llm-doctor"]:
                out.append(words[1:])
    return out


def accepted(argv: list[str]) -> None:
    """The arguments parse for their subcommand (unknown flags, bad choices and ranges raise). The
    --config file exists where the example runs (a checkout, a mounted ConfigMap), not here: the
    example configuration stands in for it."""
    argv = [str(EXAMPLES / "llm-doctor.toml") if i and argv[i - 1] == "--config" else a for i, a in enumerate(argv)]
    command = main.get_command(click.Context(main), argv[0])
    assert command is not None, argv
    with command.make_context(argv[0], argv[1:]) as ctx:
        assert ctx.params


def config_loads(text: str, tmp_path: Path) -> None:
    path = tmp_path / "llm-doctor.toml"
    path.write_text(text)
    cmd = [sys.executable, "-m", "llm_doctor", "plan", "--config", str(path), "--model", "meta-llama/Llama-3.1-8B-Instruct",
           "--gpu", "H100", "--offline", "--format", "json"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    assert out.returncode in (0, 1), out.stderr  # 2 would be a bad key or value


def test_github_actions_workflow(tmp_path: Path) -> None:
    (wf,) = load("github-actions.yml")
    assert True in wf or "on" in wf  # YAML 1.1 reads the key `on` as true
    assert wf["jobs"]
    runs = []
    for job in wf["jobs"].values():
        assert job["runs-on"] and isinstance(job["steps"], list)
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
            assert "with" not in step or "uses" in step
            runs += [step["run"]] if "run" in step else []
    lines = doctor_lines(runs)
    assert lines and all("--wait-ready" in argv and "--config" in argv for argv in lines if argv[0] == "run")
    for argv in lines:
        accepted(argv)


def test_gitlab_ci_job(tmp_path: Path) -> None:
    (ci,) = load("gitlab-ci.yml")
    stages = ci["stages"]
    jobs = {name: job for name, job in ci.items() if isinstance(job, dict) and name not in ("variables", "default", "workflow")}
    assert jobs
    for job in jobs.values():
        assert isinstance(job["script"], list) and job["script"]
        assert job.get("stage", "test") in stages
        lines = doctor_lines(job["script"] + job.get("after_script", []))
        outputs = {argv[argv.index("--output") + 1] for argv in lines if "--output" in argv}
        for report in job["artifacts"]["reports"].values():
            assert report in outputs, report  # each report GitLab reads is a file the doctor writes
        assert any(argv[0] == "run" and "--wait-ready" in argv and "--config" in argv for argv in lines)
        for argv in lines:
            accepted(argv)


def test_kubernetes_job(tmp_path: Path) -> None:
    docs = load("kubernetes-job.yaml")
    for doc in docs:
        assert doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"]
    (config_map,) = [d for d in docs if d["kind"] == "ConfigMap" and d["apiVersion"] == "v1"]
    (job,) = [d for d in docs if d["kind"] == "Job" and d["apiVersion"] == "batch/v1"]
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] in ("Never", "OnFailure")  # a Job's pods may not restart Always
    volumes = {v["name"]: v for v in pod["volumes"]}
    for container in pod["containers"]:
        assert container["name"] and container["image"]
        for mount in container["volumeMounts"]:
            assert mount["name"] in volumes and mount["mountPath"].startswith("/")
        lines = doctor_lines([container["command"][-1]])  # sh -c "...": the script
        assert lines and all("--wait-ready" in argv and "--config" in argv for argv in lines)
        for argv in lines:
            accepted(argv)
    assert volumes["config"]["configMap"]["name"] == config_map["metadata"]["name"]
    config_loads(config_map["data"]["llm-doctor.toml"], tmp_path)


def test_the_example_configuration_loads(tmp_path: Path) -> None:
    config_loads((EXAMPLES / "llm-doctor.toml").read_text(), tmp_path)


def test_a_command_line_with_a_wrong_flag_is_caught() -> None:
    with pytest.raises(click.UsageError):
        accepted(["run", "--wait-redy", "10"])
