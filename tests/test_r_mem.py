"""Sizing failures read from the engines' own words (r-mem): a traceback cut inside vLLM's divide(), GPUStack's
logged vLLM argv, and a TP size the model's heads cannot split."""

from __future__ import annotations

from pathlib import Path

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.findings import Finding
from llm_doctor.report import build_report


def findings_of(tmp_path: Path, text: str) -> list[Finding]:
    path = tmp_path / "engine.log"
    path.write_text(text)
    facts = load_paths([str(path)], Deadline(30))
    return build_report(run_checks(facts, select(load_checks()), Deadline(30)), facts).findings


SITE = "/usr/local/lib/python3.11/site-packages"


def test_traceback_cut_inside_vllm_divide_is_tp_invalid(tmp_path: Path) -> None:
    # vllm/model_executor/layers/vocab_parallel_embedding.py vocab_range_from_global_vocab_size:
    #     per_partition_vocab_size = divide(global_vocab_size, world_size)   (vllm/distributed/utils.py divide)
    text = ("Traceback (most recent call last):\n"
            f'  File "{SITE}/vllm/model_executor/layers/vocab_parallel_embedding.py", line 291, in _get_indices\n'
            "    vocab_range_from_global_vocab_size(org_vocab_size_padded, tp_rank,\n"
            f'  File "{SITE}/vllm/model_executor/layers/vocab_parallel_embedding.py", line 79, in vocab_range_from_global_vocab_size\n'
            "    per_partition_vocab_size = divide(global_vocab_size, world_size)\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "load.tp_invalid"
    assert any("family: parallel layout" in ev for ev in found[0].evidence)


def test_gpustack_vllm_argv_with_tp_not_dividing_heads(tmp_path: Path) -> None:
    # gpustack/worker/backends/vllm.py: logger.debug(f"Run vllm with arguments: {' '.join(arguments)}")
    text = ("2025-06-19T11:30:14+08:00 - gpustack.worker.backends.vllm - INFO - Starting vllm server\n"
            "2025-06-19T11:30:14+08:00 - gpustack.worker.backends.vllm - DEBUG - Run vllm with arguments: serve "
            "/models/gemma-3-27b-it --max-model-len 8192 --tensor-parallel-size 3 --host 0.0.0.0 --port 40059\n"
            "INFO 06-19 11:30:25 [api_server.py:1043] vLLM API server version 0.8.5.post1\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "load.tp_invalid"
    assert "launch command: --tensor-parallel-size 3 (command line in the log)" in found[0].evidence
    assert any("32 attention heads" in ev for ev in found[0].evidence)
    assert found[0].fixes[0].command == "--tensor-parallel-size 2"


def test_dividing_tp_is_not_flagged(tmp_path: Path) -> None:
    text = ("2025-06-19T11:30:14+08:00 - gpustack.worker.backends.vllm - DEBUG - Run vllm with arguments: serve "
            "/models/gemma-3-27b-it --max-model-len 8192 --tensor-parallel-size 4\n"
            "INFO 06-19 11:30:25 [api_server.py:1043] vLLM API server version 0.8.5.post1\n")
    assert "load.tp_invalid" not in [f.code for f in findings_of(tmp_path, text)]
