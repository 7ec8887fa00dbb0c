"""Load failures read from the engines' own raise sites (the catalogue lines cited beside each case), with the
value each fix needs computed from the numbers the message gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.report import build_report


def findings(tmp_path: Path, text: str):
    path = tmp_path / "engine.log"
    path.write_text(text)
    facts = load_paths([str(path)], Deadline(60))
    return build_report(run_checks(facts, select(load_checks()), Deadline(60)), facts).findings


@pytest.mark.parametrize(("line", "ranks"), [
    # corpus/i053 (NVIDIA/TensorRT-LLM#108): examples/*/run.py assert the engine's TP size against the MPI world
    ("But when I execute run.py I got this error.AssertionError: Engine world size (2) != Runtime world size (1)", 2),
    # tensorrt_llm/runtime/model_runner.py _builder_to_model_config: f'Engine world size ({tp_size} * {pp_size}) != ...'
    ("AssertionError: Engine world size (2 * 2) != Runtime world size (1)", 4),
])
def test_trtllm_engine_world_size_against_the_mpi_ranks(tmp_path: Path, line: str, ranks: int) -> None:
    top = findings(tmp_path, line + "\n")[0]
    assert top.code == "load.tp_invalid"
    assert f"mpirun -n {ranks} --allow-run-as-root" in top.fixes[0].summary


def test_trtllm_heads_not_a_multiple_of_tp(tmp_path: Path) -> None:
    # model_runner.py: f"The number of heads ({num_heads}) is not a multiple of tp_size ({tp_size})"
    top = findings(tmp_path, "AssertionError: The number of heads (40) is not a multiple of tp_size (3)\n")[0]
    assert top.code == "load.tp_invalid"
    assert top.fixes[0].command == "--tp_size 2"  # 40 heads split over 1, 2 (below the 3 that failed)


def test_vllm_0_2_shared_memory_limit_gives_the_context_that_fits(tmp_path: Path) -> None:
    # corpus/i069 (vllm-project/vllm#1267), vllm/utils.py check_if_can_support_max_seq_len in v0.2.1
    line = ("RuntimeError: vLLM cannot currently support max_model_len=65536 with block_size=16 on GPU with compute "
            "capability (8, 9) (required shared memory 264252.0 > available shared memory 101376).")
    top = findings(tmp_path, line + "\n")[0]
    assert top.code == "load.config_invalid"
    assert top.fixes[0].command == "--max-model-len 25344"  # 101376 B / 4 B per float32 logit, in whole 16-token blocks


def test_an_engines_tls_failure_before_serving_is_its_hub_download(tmp_path: Path) -> None:
    # corpus/z038 (lmdeploy on Windows behind a proxy): started with a repo id, the engine's only outbound call is the Hub
    text = ("G:\\Python-3.9.12>lmdeploy serve api_server liuhaotian/llava-v1.6-vicuna-7b --server-port 23333\n"
            "urllib3.exceptions.SSLError: EOF occurred in violation of protocol (_ssl.c:1129)\n"
            "\n"
            "The above exception was the direct cause of the following exception:\n"
            "\n"
            "urllib3.exceptions.ProxyError: ('Unable to connect to proxy', SSLError(SSLEOFError(8, 'EOF occurred in violation of "
            "protocol (_ssl.c:1129)')))\n")
    codes = [f.code for f in findings(tmp_path, text)]
    assert codes[:2] == ["load.model_files", "access.proxy_failed"]  # urllib3's ProxyError wraps the TLS error: the proxy's
    top = findings(tmp_path, text)[0]
    assert top.fixes[0].command == ("huggingface-cli download liuhaotian/llava-v1.6-vicuna-7b "
                                    "--local-dir /models/llava-v1.6-vicuna-7b")


def test_a_local_model_path_keeps_the_tls_failure_the_clients(tmp_path: Path) -> None:
    text = ("lmdeploy serve api_server /models/llava-v1.6-vicuna-7b --server-port 23333\n"
            "urllib3.exceptions.SSLError: EOF occurred in violation of protocol (_ssl.c:1129)\n")
    assert [f.code for f in findings(tmp_path, text)][0] == "access.tls_failed"


@pytest.mark.parametrize("line", [
    # torch/csrc/distributed/c10d/ProcessGroupGloo.cpp wrapping gloo's tcp/pair.cc error
    "RuntimeError: Gloo connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
    # corpus/i406 (SGLang across two nodes with --network host): the refused connection is between the ranks
    "SGLang uses PyTorch's Gloo collective for CPU-side distributed coordination. With --network host, Gloo defaults to the "
    "loopback interface. Every node tries to reach 127.0.0.1 and gets Connection refused.",
])
def test_a_gloo_rendezvous_failure_is_distributed_init(tmp_path: Path, line: str) -> None:
    top = findings(tmp_path, line + "\n")[0]
    assert top.code == "load.nccl_failed"
    assert "GLOO_SOCKET_IFNAME" in top.fixes[0].summary
