"""Load failures stated in the CUDA runtime's or a kernel library's own words, whichever engine prints them
(TensorRT-LLM's check_cuda_error, TurboMind's CUDA check, a linker under Triton or torch inductor): the
keyword families and engine templates that read them, at rank 1 with the line they rest on and the fix's
exact value. The source is named beside each case; the lines are the source's message with its
placeholders filled, pasted the way issue threads show them."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # TensorRT-LLM cudaUtils.h check(): "[TensorRT-LLM][ERROR] CUDA runtime error in %s: %s" of
    # cudaErrorPeerAccessUnsupported (217), a TP=2 custom all-reduce on two GPUs without P2P
    ("trtllm-peer-access", [
        "mpirun -n 2 --allow-run-as-root /app/tensorrt_llm/benchmarks/cpp/gptSessionBenchmark --engine_dir ./trt/fp16",
        "[TensorRT-LLM][ERROR] [TensorRT-LLM][ERROR] CUDA runtime error in error: peer access is not supported between "
        "these two devices",
    ], "load.nccl_failed", "peer access is not supported", "NCCL_P2P_DISABLE=1"),
    # lmdeploy allocator.h through TurboMind's CUDA check: cudaErrorCallRequiresNewerDriver (36), an 11.8 build on
    # an 11.4 driver (cudaMallocAsync pools)
    ("turbomind-newer-driver", [
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.8/site-packages/lmdeploy/turbomind/turbomind.py", line 202, in _create_model_instance',
        "    model_inst = self.tm_model.model_comm.create_model_instance(",
        "RuntimeError: [TM][ERROR] CUDA runtime error: API call is not supported in the installed CUDA driver "
        "/lmdeploy/src/turbomind/utils/allocator.h:169",
    ], "load.cuda_mismatch", "API call is not supported in the installed CUDA driver", None),
    # torch c10/cuda CUDAFunctions.cpp's warning quoting cudaErrorSystemDriverMismatch (803)
    ("torch-driver-mismatch", [
        "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
        "before calling NumCudaDevices() that might have already set an error? Error 803: system has unsupported display "
        "driver / cuda driver combination (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)",
    ], "load.cuda_mismatch", "unsupported display driver / cuda driver combination", "ldconfig -p | grep libcuda.so"),
    # triton third_party/nvidia/backend/driver.py links `libraries = ['cuda']`; torch inductor's cuda_utils the same:
    # ld finds no libcuda.so.1 where the image looks (GKE mounts the driver at /usr/local/nvidia/lib64)
    ("inductor-ld-no-libcuda", [
        "ERROR 03-18 06:29:32 [multiproc_executor.py:800] torch._inductor.exc.InductorError: CalledProcessError: Command "
        "'['/usr/bin/gcc', '/tmp/tmpm4i7fy2q/cuda_utils.c', '-O3', '-shared', '-fPIC', '-l:libcuda.so.1']' returned "
        "non-zero exit status 1.",
        "/usr/bin/ld: cannot find -l:libcuda.so.1",
        "collect2: error: ld returned 1 exit status",
    ], "load.cuda_mismatch", "cannot find -l:libcuda.so.1", "ldconfig -p | grep libcuda.so"),
    # triton driver.py libcuda_dirs' assert
    ("triton-libcuda-cannot-found", [
        "AssertionError: libcuda.so cannot found!",
    ], "load.cuda_mismatch", "libcuda.so cannot found", "ldconfig -p | grep libcuda.so"),
    # lmdeploy@v0.10.0 device_comm.cc: a TurboMind built without USE_NCCL asked for --tp 2
    ("turbomind-no-nccl-backend", [
        "lmdeploy serve api_server llm_models/internlm2_5-7b-chat --server-port 23333 --tp 2",
        "[TM][FATAL] comm\\device_comm.cc(28): Check failed: 0 Unknown communication backend: nccl",
    ], "load.nccl_failed", "Unknown communication backend: nccl", "--communicator cuda-ipc"),
    # TensorRT-LLM thop/fp8BlockScalingGemm.cpp: no FP8 block-scaling kernel for this SM
    ("trtllm-fp8-block-scaling-sm", [
        "trtllm-serve /workplace/models/Qwen3-30B-A3B-FP8 --backend pytorch --tp_size 1",
        "RuntimeError: Unsupported SM version for FP8 block scaling GEMM",
    ], "load.quantization_unsupported", "Unsupported SM version for FP8 block scaling GEMM", None),
    # torch@v2.4.0 cuda/__init__.py _check_capability: only the warning's last line kept, then the engine's cut traceback
    ("torch-incompatible-device-last-line", [
        "If you want to use the NVIDIA GeForce RTX 5070 Ti GPU with PyTorch, please check the instructions at "
        "https://pytorch.org/get-started/locally/",
        "  warnings.warn(",
        "ERROR 04-07 13:31:03 [core.py:390] EngineCore hit an exception: Traceback (most recent call last):",
        'ERROR 04-07 13:31:03 [core.py:390]   File "/opt/venv/lib/python3.10/site-packages/vllm/v1/engine/core.py", line 378, '
        "in run_engine_core",
    ], "load.cuda_mismatch", "RTX 5070 Ti GPU with PyTorch", None),
    # lmdeploy@v0.9.2 turbomind/deploy/loader.py create_loader: no weight files it reads in the path
    ("turbomind-no-loader", [
        "RuntimeError: Failed to find valid loader for /models/internlm2_5-7b-chat",
    ], "load.model_files", "Failed to find valid loader for /models/internlm2_5-7b-chat", None),
    # lmdeploy@v0.9.2 pytorch/models/internlm.py (and the other model classes): a rope type this release does not build
    ("lmdeploy-rope-type", [
        "RuntimeError: Unsupported rope type: longrope",
    ], "load.engine_outdated", "Unsupported rope type: longrope", "pip install -U lmdeploy transformers"),
    # lmdeploy@v0.9.2 turbomind/deploy/target_model/base.py: a weight dimension --tp does not divide
    ("turbomind-split-num", [
        "lmdeploy serve api_server /models/internlm2_5-7b-chat --tp 3",
        "RuntimeError: layers.0.feed_forward.w13.weight: shape=[4096, 28672], split_num=3",
    ], "load.tp_invalid", "split_num=3", None),
    # lmdeploy@v0.9.2 pytorch/engine/cache_engine.py: --quant-policy other than 0, 4, 8
    ("lmdeploy-quant-policy", [
        "ValueError: unsupported quant_policy 16",
    ], "load.config_invalid", "unsupported quant_policy 16", None),
    # lmdeploy@v0.9.2 core/check.cc: TurboMind's TM_CHECK_EQ(head_num_ % tp_size, 0) << head_num_ << " " << tp_size
    ("turbomind-check-heads-tp", [
        "lmdeploy serve api_server /models/qwen2-7b --tp 4",
        "[TM][FATAL] models/llama/unified_attention_layer.cc(56): Check failed: head_num_ % tp_size == 0 (2 vs. 0) 28 4",
    ], "load.tp_invalid", "Check failed: head_num_ % tp_size == 0", "--tp 2"),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_runtime_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_peer_access_named_by_its_enum_is_the_same_failure(tmp_path) -> None:
    """cuda-python and the driver API name it without the sentence: the family reads the enum too."""
    assert_rank_one(tmp_path, "peer-enum", ["RuntimeError: CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"], "load.nccl_failed",
                    "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "NCCL_P2P_DISABLE=1")


def test_a_traceback_cut_inside_the_remote_code_check_is_its_refusal(tmp_path) -> None:
    """transformers@v4.40.0 dynamic_module_utils.py: resolve_trust_remote_code raises only its own refusal, so a paste
    that stops at the from_pretrained statement calling it (the exception line lost) is that refusal."""
    site = "/opt/venv/lib/python3.10/site-packages"
    assert_rank_one(tmp_path, "cut-remote-code", [
        "Traceback (most recent call last):",
        f'  File "{site}/lemonade/tools/oga/load.py", line 563, in _load_model_and_setup_state',
        "    hf_tokenizer = AutoTokenizer.from_pretrained(",
        f'  File "{site}/transformers/models/auto/tokenization_auto.py", line 1027, in from_pretrained',
        "    trust_remote_code = resolve_trust_remote_code(",
    ], "load.remote_code", "resolve_trust_remote_code", None)


def test_a_traceback_cut_inside_another_call_stays_unrecognised(tmp_path) -> None:
    """The callee names the cause only where a family knows it: a cut inside any other call is no remote-code refusal."""
    site = "/opt/venv/lib/python3.10/site-packages"
    assert_rank_one(tmp_path, "cut-elsewhere", [
        "Traceback (most recent call last):",
        f'  File "{site}/transformers/models/auto/tokenization_auto.py", line 1027, in from_pretrained',
        "    config = AutoConfig.from_pretrained(",
    ], "load.unrecognized_failure", "from_pretrained", None)


def test_too_many_peers_is_the_ranks_interconnect(tmp_path) -> None:
    """cudaErrorTooManyPeers (711) as torch's CUDA check prints it: P2P mappings ran out (a custom all-reduce over
    more GPUs than one can map), a distributed failure whose generic fix sends NCCL through host memory."""
    lines = ["RuntimeError: CUDA error: peer mapping resources exhausted"]
    assert_rank_one(tmp_path, "too-many-peers", lines, "load.nccl_failed", "peer mapping resources exhausted",
                    "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET")


def test_a_driver_older_than_the_runtime_says_upgrade_the_driver(tmp_path) -> None:
    """cudaErrorCallRequiresNewerDriver: the fix is the driver (or a build for its CUDA), not another torch wheel."""
    log = tmp_path / "newer-driver.log"
    log.write_text("RuntimeError: [TM][ERROR] CUDA runtime error: API call is not supported in the installed CUDA driver "
                   "/lmdeploy/src/turbomind/utils/allocator.h:169\n")
    top = findings_of(log)[0]
    assert top.code == "load.cuda_mismatch"
    assert top.fixes[0].summary.startswith("Upgrade the NVIDIA driver"), [f.summary for f in top.fixes]


@pytest.mark.parametrize(("frame", "statement", "code"), [
    # vllm@6ae52299 worker.py: Worker.init_device calls the dtype check, which raises only the bfloat16 refusal
    ('  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 176, in init_device',
     "    _check_if_gpu_supports_dtype(self.model_config.dtype)", "load.dtype_unsupported"),
    # vllm@be696453 compressed_tensors.py: _get_scheme_from_parts calls the capability check of the checkpoint's scheme
    ('  File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/layers/quantization/compressed_tensors/'
     'compressed_tensors.py", line 311, in _get_scheme_from_parts',
     "    if self._check_scheme_supported(CompressedTensorsW8A8Fp8.get_min_capability(), error=False):",
     "load.quantization_unsupported"),
])
def test_a_traceback_cut_at_the_call_of_a_one_cause_check(tmp_path, frame: str, statement: str, code: str) -> None:
    """The families that read a check by the frame it raised in read it too as the callee of the frame above it."""
    assert_rank_one(tmp_path, "cut-at-call", ["Traceback (most recent call last):", frame, statement], code, frame.strip()[:20], None)
