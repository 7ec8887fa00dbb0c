"""Engine failures s-engines reads from the engines' own sources, judged end to end (rank-1 code, its evidence and its fix):
TensorRT's and TensorRT-LLM's build/version refusals, mlx's strict weight loading, and a crash whose only evidence is a
native (C++) backtrace."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import analysis

# (name, log lines, rank-1 code, a piece of its evidence, a piece of its first fix's summary, its first fix's command)
CASES = [
    # TensorRT's builder (builderHelpers.cpp checkCurrentSMEnabled) through TensorRT-LLM's Builder.build_engine
    # (NVIDIA/TensorRT-LLM 008b2b8 tensorrt_llm/builder.py); the line of NVIDIA/TensorRT-LLM#2400
    ("trt-sm-70", ["[11/01/2024-03:33:08] [TRT] [E] IBuilder::buildSerializedNetwork: Error Code 9: API Usage Error (Target GPU SM 70 "
                   "is not supported by this TensorRT release.)",
                   "[11/01/2024-03:33:08] [TRT-LLM] [E] Engine building failed, please check the error log."],
     "load.cuda_mismatch", "Target GPU SM 70 is not supported", "does not build for SM 70", None),
    # TensorRT-LLM 1a43c7d cpp/tensorrt_llm/plugins/quantizeTensorPlugin/quantizeTensorPlugin.cpp: TLLM_CHECK_WITH_INFO(d == a + length,
    # "Expected length (%d) != real length (%d). This is often caused by using different TensorRT LLM version to build engine and run engine.")
    ("trt-plugin-length", ["[TensorRT-LLM][ERROR] Assertion failed: Expected length (1024) != real length (1032). This is often caused by "
                           "using different TensorRT LLM version to build engine and run engine."],
     "load.cuda_mismatch", "Expected length (1024) != real length (1032)", "Rebuild the TensorRT engine here", None),
    # the same check before it carried a message (TLLM_CHECK(d == a + length)); NVIDIA/TensorRT-LLM#583
    ("trt-plugin-bare-check", ["[TensorRT-LLM][INFO] Loaded engine size: 15448 MiB",
                               "[TensorRT-LLM][ERROR] tensorrt_llm::common::TllmException: [TensorRT-LLM][ERROR] Assertion failed: d == a + "
                               "length (/app/tensorrt_llm/cpp/tensorrt_llm/plugins/gptAttentionCommon/gptAttentionCommon.cpp:320)",
                               "1       0x7f6ce803be0b /opt/tritonserver/backends/tensorrtllm/libnvinfer_plugin_tensorrt_llm.so.9(+0x35e0b) "
                               "[0x7f6ce803be0b]"],
     "load.cuda_mismatch", "Assertion failed: d == a + length", "Rebuild the TensorRT engine here", None),
    # ml-explore/mlx v0.26.3 python/mlx/nn/layers/base.py load_weights: f"Received {num_extra} parameters not in model: \n{extras}.";
    # the lines of Blaizzy/mlx-vlm#429
    ("mlx-received-count", ['  File "miniconda3/lib/python3.12/site-packages/mlx/nn/layers/base.py", line 185, in load_weights',
                            "    raise ValueError(",
                            "ValueError: Received 269 parameters not in model: ",
                            "audio_tower.conformer.0.attention.attn.k_proj.biases,"],
     "load.engine_outdated", "Received 269 parameters not in model", "Upgrade mlx-lm and mlx", "pip install -U mlx-lm mlx"),
    # mlx v0.1-v0.26.1: f"Received parameters not in model: {extras}." (ml-explore/mlx#1024: an outdated mlx-lm)
    ("mlx-received-set", ["ValueError: Received parameters not in model: {'model.layers.0.self_attn.q_layernorm.weight'}."],
     "load.engine_outdated", "Received parameters not in model", "Upgrade mlx-lm and mlx", "pip install -U mlx-lm mlx"),
    # mlx v0.26.3: f"Missing {num_missing} parameters: \n{missing}."
    ("mlx-missing", ["ValueError: Missing 4 parameters: ", "model.layers.0.mlp.gate.weight,"],
     "load.engine_outdated", "Missing 4 parameters", "Upgrade mlx-lm and mlx", "pip install -U mlx-lm mlx"),
    # ml-explore/mlx-lm d78bf58 mlx_lm/utils.py load_model: a model_file in config.json without trust_remote_code
    ("mlx-remote-code", ["ValueError: The model at /Users/me/models/custom requires importing and running a custom module ('modeling.py') "
                         "to build its architecture. This is disabled by default. Pass trust_remote_code=True if you trust this model."],
     "load.remote_code", "requires importing and running a custom module", "own Python code", "--trust-remote-code"),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "summary", "command"), CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path: Path, name: str, lines: list[str], code: str, evidence: str, summary: str, command: str | None) -> None:
    found = analysis.findings_of(analysis.written(tmp_path, "\n".join(lines) + "\n"))
    assert found and found[0].code == code, [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence
    assert summary in found[0].fixes[0].summary, [f.summary for f in found[0].fixes]
    assert found[0].fixes[0].command == command, [f.command for f in found[0].fixes]


# a paste that kept only the stack (triton-inference-server/tensorrtllm_backend#375: TensorRT-LLM's TllmException frames,
# common/tllmException.cpp), gdb's frames as ggml_print_backtrace prints them
BACKTRACES = [
    ("tllm-frames", ["17      0x7fd11211ce00 tensorrt_llm::batch_manager::GptManager::GptManager(std::filesystem::path const&, "
                     "tensorrt_llm::batch_manager::TrtGptModelType, int) + 336",
                     "18      0x7fd1f0fb3b62 /opt/tritonserver/backends/tensorrtllm/libtriton_tensorrtllm.so(+0x18b62) [0x7fd1f0fb3b62]"],
     "tensorrt_llm::batch_manager::GptManager::GptManager"),
    ("gdb-frames", ["#3  0x00007f5c1e2c4a1b in ggml_abort () from /app/libggml-base.so",
                    "#4  0x00007f5c1e3d0c2e in ggml_cuda_op_mul_mat () from /app/libggml-cuda.so"], "ggml_abort ()"),
]


@pytest.mark.parametrize(("name", "lines", "where"), BACKTRACES, ids=[c[0] for c in BACKTRACES])
def test_backtrace_alone_is_a_crash(tmp_path: Path, name: str, lines: list[str], where: str) -> None:
    """Only frames: an unrecognised crash quoting the first frame and naming where it crashed, never an all-clear or 'not read'."""
    found = analysis.findings_of(analysis.written(tmp_path, "\n".join(lines) + "\n"))
    assert found and found[0].code == "load.unrecognized_failure", [f.code for f in found]
    assert where in found[0].title, found[0].title
    assert any(lines[0] in line for line in found[0].evidence), found[0].evidence


def test_backtrace_after_its_exception_adds_nothing(tmp_path: Path) -> None:
    """The frames under a failure already read (TensorRT-LLM's what() of NVIDIA/TensorRT-LLM#2855) only say where: no second finding."""
    lines = ["  what():  [TensorRT-LLM][ERROR] Assertion failed: FP8 FMHA cannot be enabled except on Ada or Hopper or Blackwell Arch. "
             "(/code/tensorrt_llm/cpp/tensorrt_llm/common/attentionOp.cpp:2357)",
             "1       0x7009a217b67c tensorrt_llm::common::throwRuntimeError(char const*, int, std::string const&) + 95",
             "2       0x7009a233c6c4 tensorrt_llm::common::op::AttentionOp::initialize() + 5492"]
    codes = [f.code for f in analysis.findings_of(analysis.written(tmp_path, "\n".join(lines) + "\n"))]
    assert codes == ["load.dtype_unsupported"], codes
