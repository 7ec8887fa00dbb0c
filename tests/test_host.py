"""Host and process collector (psutil) against this machine and a real process whose command line
is an engine's, and the launch-command reader for `analyze`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llm_doctor.collect import host
from llm_doctor.engine import load_checks, run_checks, select
from llm_doctor.facts import Facts
from tests.fake_engine import fake_engine

CORPUS_CMD = Path(__file__).resolve().parents[1] / "fixtures" / "cmdline"


@pytest.fixture
def fake_llama_server(tmp_path):
    """A real process named llama-server (a sleeping Python script) with a real engine argv and env."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0", NCCL_DEBUG="INFO", LLAMA_API_KEY_X="x", VLLM_API_KEY="sk-canary-host-123456")
    with fake_engine(tmp_path / "llama-server", ["-m", "/models/gemma.gguf", "--parallel", "1", "-t", "4096", "--port", "8081"],
                     env) as proc:
        yield proc


def test_host_facts_of_this_machine():
    h = host.collect(sample_s=0.1)
    assert h.cpu_count and h.cpu_count >= 1
    assert h.mem_total_mib and h.mem_total_mib > 100
    assert h.swap_total_mib is not None and h.load_avg_1m is not None
    if Path("/dev/shm").exists():
        assert h.shm_total_mib is not None


def test_engine_process_found_with_args_and_env(fake_llama_server):
    (ep,) = [p for p in host.engine_processes() if p.pid == fake_llama_server.pid]
    assert ep.engine == "llamacpp"
    assert ep.config.max_num_seqs == 1 and ep.config.sources["max_num_seqs"] == "process"
    assert ep.env["CUDA_VISIBLE_DEVICES"] == "0" and ep.env["NCCL_DEBUG"] == "INFO"
    assert ep.env["VLLM_API_KEY"] == "<set>"  # never the value
    assert "sk-canary-host-123456" not in repr(ep)
    assert ep.rss_mib and ep.rss_mib > 0


def test_running_engine_with_too_many_threads_is_cpu_bound(fake_llama_server):
    h = host.collect(sample_s=0.1)
    h.processes = [p for p in h.processes if p.pid == fake_llama_server.pid]
    facts = Facts(host=h)
    res = next(r for r in run_checks(facts, select(load_checks(), ["perf.host_cpu"])) if r.id == "perf.host_cpu")
    finding = next(f for f in res.findings if "-t 4096" in f.title)
    assert finding.code == "perf.cpu_bound"
    assert finding.fixes[0].command == f"-t {h.cpu_physical}"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("vllm serve Qwen/Qwen2.5-7B --tensor-parallel-size 2\n", True),
        ("# launch\n$ python -m sglang.launch_server \\\n  --model-path x --tp 2\n", True),
        ("docker run --gpus all vllm/vllm-openai:latest --model x\n", True),
        ("INFO 04-16 10:27:28 [api_server.py:1035] vllm serve x --tp 2\nINFO 04-16 10:27:29 ...\n", False),
        ("[2025-03-10 16:21:21 TP1] python -m sglang.launch_server --tp 2\n", False),
        ("just some text\n", False),
    ],
)
def test_command_sniffer_does_not_claim_logs(text, expected):
    assert host.looks_like_command(text) is expected


def test_real_multiline_command_from_an_issue():
    from llm_doctor.collect.files import load_paths
    from llm_doctor.engine import Deadline

    facts = load_paths([str(CORPUS_CMD / "sglang-tp8-h200-chunked-prefill-32768.txt")], Deadline(10))
    d = facts.deployment
    assert d.engine == "sglang" and d.tensor_parallel_size == 8
    assert d.max_num_seqs == 128 and d.max_num_batched_tokens == 32768 and d.max_model_len == 163840


def test_secret_env_in_a_launch_command_is_not_kept(tmp_path):
    from llm_doctor.collect.files import load_paths
    from llm_doctor.engine import Deadline

    p = tmp_path / "run.sh"
    p.write_text("VLLM_API_KEY=token-canary-98765 CUDA_VISIBLE_DEVICES=0,1 vllm serve m --tensor-parallel-size 2\n")
    facts = load_paths([str(p)], Deadline(10))
    assert facts.deployment.env == {"VLLM_API_KEY": "<set>", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert "token-canary-98765" not in repr(facts.to_dict())


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], True),
        (["/opt/venv/bin/vllm", "serve", "m"], True),
        (["python3", "-m", "sglang.launch_server", "--model-path", "m"], True),
        (["/usr/bin/python3", "/opt/llama-server", "-m", "x.gguf"], True),
        (["cmake", "--build", "build", "--target", "llama-server", "-j2"], False),
        (["grep", "-r", "vllm serve", "."], False),
        (["python", "-m", "pip", "install", "vllm"], False),
    ],
)
def test_only_engines_count_as_engine_processes(argv, expected):
    assert host.is_engine_argv(argv) is expected


def test_launch_script_exports_reach_the_engine_env(tmp_path):
    from llm_doctor.collect.files import load_paths
    from llm_doctor.engine import Deadline

    p = tmp_path / "start.sh"
    p.write_text("#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=2,3\nexport NCCL_P2P_DISABLE=1\n"
                 "vllm serve m --tensor-parallel-size 2\n")
    facts = load_paths([str(p)], Deadline(10))
    assert facts.deployment.env == {"CUDA_VISIBLE_DEVICES": "2,3", "NCCL_P2P_DISABLE": "1"}
