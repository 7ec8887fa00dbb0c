"""The gate's check as a pure function of Facts (TTFT and tokens/s from the load probe, GPU memory,
the KV cache from /metrics), the load probe's TTFT against a real streaming server, and model
configs read from the standard Hugging Face cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from llm_doctor.checks.gate.requirements import requirements
from llm_doctor.collect.load_probe import probe
from llm_doctor.facts import Facts
from llm_doctor.facts.gate import GateFacts
from llm_doctor.facts.gpu import Gpu, GpuFacts
from llm_doctor.facts.host import HostFacts, ProbeFacts
from llm_doctor.facts.metrics import MetricsFacts
from llm_doctor.models import from_hf_cache, hf_cache_root
from tests.conftest import ROOT
from tests.servers.http import FakeServer
from tests.servers.openai_like import VllmLike

QWEN_AWQ = ROOT / "fixtures" / "models" / "qwen2-7b-instruct-awq"


def gated(**req: float) -> Facts:
    return Facts(gate=GateFacts(config_file="llm-doctor.toml", requirements=dict(req)))


def test_ttft_and_tokens_per_s_from_the_load_probe() -> None:
    facts = gated(max_ttft_ms=200, min_tokens_per_s=100)
    facts.host = HostFacts(probe=ProbeFacts(concurrency=4, tps_1=30.0, tps_n=80.5, ttft_ms=350.2, seconds=4.0))
    out = requirements(facts)
    assert [f.code for f in out.findings] == ["gate.ttft_above", "gate.tokens_per_s_below"]
    assert out.findings[0].title == "time to first token 350 ms; the gate allows at most 200 ms"
    assert out.findings[1].title == "80.5 generated tokens/s at concurrency 4; the gate requires at least 100.0"
    facts.host.probe = ProbeFacts(concurrency=4, tps_1=30.0, tps_n=120.0, ttft_ms=150.0)
    out = requirements(facts)
    assert out.findings == [] and out.detail == "TTFT 150 ms <= 200 ms; 120.0 tokens/s >= 100.0"


def test_gpu_memory_fraction_names_the_gpus_over_it() -> None:
    facts = gated(max_gpu_memory_fraction=0.9)
    facts.gpus = GpuFacts(available=True, gpus=[Gpu(0, "H100", memory_total_mib=81559, memory_used_mib=78000),
                                                Gpu(1, "H100", memory_total_mib=81559, memory_used_mib=40000)])  # fmt: skip
    (f,) = requirements(facts).findings
    assert f.code == "gate.gpu_memory_above"
    assert f.evidence[0] == "GPU 0 H100: 78,000 of 81,559 MiB used (95.6%)"
    assert f.fixes[0].command == "--gpu-memory-utilization 0.9"


def test_kv_tokens_from_the_engines_own_metrics_come_first() -> None:
    facts = gated(min_kv_cache_tokens=100000)
    facts.metrics = MetricsFacts(available=True, engine="vllm", cache_config={"num_gpu_blocks": "5000", "block_size": "16"})
    (f,) = requirements(facts).findings
    assert f.title == "the KV cache holds 80,000 tokens; the gate requires at least 100,000"
    assert f.evidence[0] == "KV cache tokens 80,000 (/metrics vllm:cache_config_info num_gpu_blocks 5000 x block_size 16)"


def test_the_load_probe_measures_time_to_first_token_on_a_real_stream() -> None:
    with FakeServer(VllmLike(models=["m"])) as srv:
        result = probe(srv.url + "/v1", None, "m", 2)
    assert result.tps_1 is not None and result.ttft_ms is not None and result.ttft_ms > 0


def test_a_model_in_the_hugging_face_cache_is_known(tmp_path: Path) -> None:
    repo = tmp_path / "hf" / "hub" / "models--acme--qwen-awq-private"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0f3c2d1")
    shutil.copytree(QWEN_AWQ, repo / "snapshots" / "0f3c2d1")
    env = {"HF_HOME": str(tmp_path / "hf")}
    assert hf_cache_root(env) == tmp_path / "hf" / "hub"
    assert hf_cache_root({"HF_HUB_CACHE": "/x/y"}) == Path("/x/y")
    assert hf_cache_root({"XDG_CACHE_HOME": "/c"}) == Path("/c/huggingface/hub")
    model = from_hf_cache("acme/qwen-awq-private", env=env)
    assert model is not None and model.name == "acme/qwen-awq-private"
    assert model.source == f"Hugging Face cache {repo / 'snapshots' / '0f3c2d1'}/config.json"
    assert from_hf_cache("acme/not-cached", env=env) is None
    cmd = [sys.executable, "-m", "llm_doctor", "plan", "--model", "acme/qwen-awq-private", "--gpu", "L4", "--offline", "--format", "json"]
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    plan = json.loads(subprocess.run(cmd, capture_output=True, text=True, env={**base, **env}, timeout=120).stdout)["facts"]["plan"]
    assert plan["verdict"] == "ok" and plan["kv_cache_tokens"] > 0
    plan = json.loads(subprocess.run(cmd, capture_output=True, text=True, env=base, timeout=120).stdout)["facts"]["plan"]
    assert plan["verdict"] == "model_unknown"
    assert plan["reasons"] == [f"acme/qwen-awq-private is neither in the Hugging Face cache ({tmp_path}/.cache/huggingface/hub) "
                               "nor in the built-in table, and the hub is off (offline)"]  # fmt: skip
