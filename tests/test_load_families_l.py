"""Load failures whose message families the engines' and platforms' sources write, read from those sources: the
first GGUF reader's magic-number refusal, SageMaker's ping health check, the TurboMind allocation site that places
an out-of-memory in the weights or after them. Each log is the source's message with its placeholders filled, the
source named beside each case."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of, written

SAGEMAKER_PING = ("The primary container for production variant AllTraffic did not pass the ping health check. Please check "
                  "CloudWatch logs for this endpoint.")

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # llama.cpp@6381d4e ggml.c gguf_init_from_file (2023-08-21..2023-10-20): an old GGJT .bin given to a GGUF build
    ("gguf-invalid-magic-number", [
        "gguf_init_from_file: invalid magic number 67676a74",
        "error loading model: llama_model_loader: failed to load model from /models/llama-2-7b-chat.bin",
        "llama_load_model_from_file: failed to load model",
    ], "load.model_files", "invalid magic number 67676a74", None),
    # aws/sagemaker-python-sdk local_container_mode.py and the hosted endpoint's FailureReason: /ping never answered
    ("sagemaker-ping-health-check", [SAGEMAKER_PING], "load.startup_timeout", "did not pass the ping health check", None),
    # the same words under the SDK's waiter: the cause is the echo's until the container's log says more
    ("sagemaker-ping-in-sdk-exception", [
        "sagemaker.exceptions.UnexpectedStatusException: Error hosting endpoint llm-endpoint: Failed. Reason: " + SAGEMAKER_PING,
    ], "load.startup_timeout", "ping health check", None),
    # a transformers error the container logged before SageMaker gave up is the cause; the health check is its echo
    ("sagemaker-ping-after-missing-config", [
        "OSError: /opt/ml/model does not appear to have a file named config.json. Checkout "
        "'https://huggingface.co//opt/ml/model/tree/None' for available files.",
        SAGEMAKER_PING,
    ], "load.model_files", "does not appear to have a file named config.json", None),
    # lmdeploy@v0.4.0 src/turbomind/utils/memory_utils.cu:32 deviceMalloc: the weights' allocation (LlamaWeight.cc)
    ("turbomind-device-malloc-weights", [
        "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/memory_utils.cu:32",
    ], "load.weights_oom", "memory_utils.cu:32", None),
    # the same from a Windows wheel, the path printed with backslashes
    ("turbomind-device-malloc-windows", [
        r"RuntimeError: [TM][ERROR] CUDA runtime error: out of memory D:\a\lmdeploy\lmdeploy\src\turbomind\utils\memory_utils.cu:32",
    ], "load.weights_oom", "memory_utils.cu:32", None),
    # lmdeploy@v0.4.0 src/turbomind/utils/allocator.h:231 (cudaMallocAsync): KV blocks and batch buffers, after the weights
    ("turbomind-allocator-after-weights", [
        "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/allocator.h:231",
    ], "load.runtime_oom", "allocator.h:231", None),
]


@pytest.mark.parametrize("name,lines,code,evidence,command", CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path, name, lines, code, evidence, command) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_sagemaker_health_check_fix_names_the_deploy_timeout(tmp_path) -> None:
    """The fix is SageMaker's own setting, sized from the default wait, not a Kubernetes probe."""
    top = findings_of(written(tmp_path, SAGEMAKER_PING + "\n"))[0]
    assert top.code == "load.startup_timeout"
    assert "CloudWatch" in top.fixes[0].summary
    assert "container_startup_health_check_timeout=1800" in top.fixes[1].summary
