"""Engine failures that read as `load.unrecognized_failure` although their source names the cause: an engine's own
assertion (TensorRT-LLM's Executor, TurboMind's Windows barrier), a registry lookup of an architecture the engine
lacks, and a traceback cut before its exception line whose last frame raises one family only. Each log below is
written the way the cited source prints it."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.logparse.lines import normalise
from llm_doctor.report import build_report


def findings(tmp_path: Path, text: str):
    path = tmp_path / "engine.log"
    path.write_text(text)
    facts = load_paths([str(path)], Deadline(60))
    return build_report(run_checks(facts, select(load_checks()), Deadline(60)), facts).findings


@pytest.mark.parametrize("line", [
    # cpp/tensorrt_llm/executor/executorImpl.cpp initializeWorkers, the older 'tp*pp' and the newer 'tp*pp*cp' wording
    "[TensorRT-LLM][ERROR] Assertion failed: With communicationMode kLEADER, MPI worldSize is expected to be equal to "
    "tp*pp when participantIds are not specified (/src/tensorrt_llm/cpp/tensorrt_llm/executor/executorImpl.cpp:412)",
    "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: With communicationMode kLEADER, MPI worldSize is expected to "
    "be equal to tp*pp*cp when participantIds are not specified",
    "[TensorRT-LLM][ERROR] Assertion failed: When specifying participantIds, participantIds size (2) must be equal to "
    "tp*pp*cp (tp is 4, pp is 1, cp is 1)",
])
def test_trtllm_executor_ranks_against_the_engines_tp_pp(tmp_path: Path, line: str) -> None:
    top = findings(tmp_path, line + "\n")[0]
    assert top.code == "load.tp_invalid"
    assert "--world_size <tp*pp>" in top.fixes[0].summary


@pytest.mark.parametrize("line", [
    # lmdeploy v0.2-v0.7 FT_CHECK (utils/cuda_utils.h: "[TM][ERROR] " + info + " Assertion fail: " + file + ":" + line)
    "RuntimeError: [TM][ERROR]  Assertion fail: D:\\a\\lmdeploy\\lmdeploy\\src/turbomind/models/llama/Barrier.h:20",
    # lmdeploy v0.16 TM_CHECK (core/check.cc "Check failed: <expr>", logger.cc "[TM][FATAL][time][file:line]")
    "[TM][FATAL][0514.12:29:04.123456][Barrier.h:20] Check failed: count == 1",
])
def test_turbomind_windows_barrier_is_one_gpu_only(tmp_path: Path, line: str) -> None:
    top = findings(tmp_path, line + "\n")[0]
    assert top.code == "load.tp_invalid"
    assert top.fixes[0].command == "--tp 1"
    assert "Windows" in top.fixes[0].summary


def test_a_keyerror_on_an_architecture_class_is_an_engine_without_it(tmp_path: Path) -> None:
    # tensorrt_llm/models/modeling_utils.py PretrainedConfig.from_dict: MODEL_MAP[config['architecture']]
    log = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/tensorrt_llm/models/modeling_utils.py", line 416, in from_dict\n'
        "    model_cls = MODEL_MAP[config['architecture']]\n"
        "KeyError: 'Qwen2_5_VLForConditionalGeneration'\n"
    )
    top = findings(tmp_path, log)[0]
    assert top.code == "load.engine_outdated"
    assert any("family: unsupported model" in e for e in top.evidence)


def test_a_keyerror_on_another_key_is_no_architecture(tmp_path: Path) -> None:
    log = "Traceback (most recent call last):\n  File \"/app/server.py\", line 3, in main\n    x = cfg['max_len']\nKeyError: 'max_len'\n"
    assert findings(tmp_path, log)[0].code == "load.unrecognized_failure"


CUT_DTYPE = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 71, in init_model\n'
    "    _check_if_gpu_supports_dtype(self.model_config.dtype)\n"
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 231, in _check_if_gpu_supports_dtype\n'
)


def test_a_traceback_cut_in_the_dtype_check_is_bfloat16_on_an_old_gpu(tmp_path: Path) -> None:
    # vllm/worker/worker.py _check_if_gpu_supports_dtype raises only 'Bfloat16 is only supported on GPUs with compute capability ...'
    top = findings(tmp_path, CUT_DTYPE)[0]
    assert top.code == "load.dtype_unsupported"
    assert top.fixes[0].command == "--dtype float16"
    assert any("family: dtype" in e for e in top.evidence)


def test_a_traceback_cut_in_a_frame_no_family_names_stays_unrecognised(tmp_path: Path) -> None:
    log = "Traceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/vllm/engine/llm_engine.py\", line 795, in _run_workers\n"
    top = findings(tmp_path, log)[0]
    assert top.code == "load.unrecognized_failure"
    assert top.fixes[0].summary.startswith("Get the rest of the log")


def test_a_traceback_cut_in_the_compressed_tensors_scheme_check_is_the_quantization(tmp_path: Path) -> None:
    # compressed_tensors.py CompressedTensorsConfig._check_scheme_supported: 'Quantization scheme is not supported for the current GPU'
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/layers/quantization/compressed_tensors/'
        'compressed_tensors.py", line 205, in _check_scheme_supported\n'
    )
    assert findings(tmp_path, log)[0].code == "load.quantization_unsupported"


def test_fastchat_worker_prefix_is_peeled_off() -> None:
    # fastchat/utils.py build_logger: "%(asctime)s | %(levelname)s | %(name)s | %(message)s", stderr at ERROR
    line = normalise(1, 'qanything  | 2024-02-20 21:46:23 | ERROR | stderr |   File "/x/vllm/worker/worker.py", line 231, in f')
    assert line.text == 'File "/x/vllm/worker/worker.py", line 231, in f'
    assert line.level == "ERROR"


def test_fastchat_worker_traceback_is_read_as_a_traceback(tmp_path: Path) -> None:
    log = "".join(f"qanything-container-local  | 2024-02-20 21:46:23 | ERROR | stderr | {x}\n" for x in CUT_DTYPE.splitlines())
    assert findings(tmp_path, log)[0].code == "load.dtype_unsupported"
