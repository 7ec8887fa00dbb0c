"""Engine arguments the engine's own validators reject, and launchers that gave up on a loading
server: the code, the quoted line and the value the fix gives, from the engines' own messages
(vLLM SchedulerConfig/CacheConfig validators, TGI's sharding assert, llama-swap's and docker
compose's health checks)."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of

_PYDANTIC = "[type=value_error, input_value=ArgsKwargs((), {'runner_type': 'generate'}), input_type=ArgsKwargs]"

CASES = [
    # vllm/config/scheduler.py verify_max_model_len, raised through pydantic
    ("vllm-batched-below-model-len", ["pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig",
                                      "  Value error, max_num_batched_tokens (2048) is smaller than max_model_len (32768). This "
                                      "effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM "
                                      "reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len. "
                                      + _PYDANTIC],
     "load.config_invalid", "max_num_batched_tokens (2048) is smaller than max_model_len (32768)", "--max-num-batched-tokens 32768"),
    # vllm/config.py SchedulerConfig._verify_args (V0)
    ("vllm-batched-below-seqs", ["ValueError: max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256)."],
     "load.config_invalid", "must be greater than or equal to max_num_seqs (256)", "--max-num-batched-tokens 256"),
    # vllm/config.py CacheConfig._verify_args
    ("vllm-util-above-one", ["ValueError: GPU memory utilization must be less than 1.0. Got 90.0."],
     "load.config_invalid", "Got 90.0", "--gpu-memory-utilization 0.9"),
    # vllm/config.py CacheConfig._verify_cache_dtype
    ("vllm-kv-dtype", ["ValueError: Unknown kv cache dtype: fp16"], "load.config_invalid", "Unknown kv cache dtype: fp16", "--kv-cache-dtype auto"),
    # a SchedulerConfig rejection no template knows yet is still the arguments' (the family of pydantic's header)
    ("vllm-scheduler-config-unknown-reason", ["pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig"],
     "load.config_invalid", "family: engine arguments", None),
    # vLLM's LLM(**kwargs) hands its keywords to EngineArgs: Python names the one this version lacks
    ("vllm-engine-args-kwarg", ["TypeError: EngineArgs.__init__() got an unexpected keyword argument 'max_tokens'"],
     "load.config_invalid", "family: engine arguments", None),
    # TGI server/text_generation_server/utils/weights.py (v2.0.1): a weight dimension that --num-shard does not divide
    ("tgi-choosen-size", ["AssertionError: The choosen size 32001 is not compatible with sharding on 2 shards"],
     "load.tp_invalid", "not compatible with sharding on 2 shards", None),
    # llama-swap proxy/process.go (older wording) and docker compose's depends_on: service_healthy
    ("llama-swap-health-check", ["unable to start process: health check failed after 15s"],
     "load.startup_timeout", "health check failed after 15s", None),
    ("compose-unhealthy", ["dependency failed to start: container vllm-server-1 is unhealthy"],
     "load.startup_timeout", "is unhealthy", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_engine_argument_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_a_model_config_rejection_keeps_its_own_cause(tmp_path) -> None:
    """ModelConfig also rejects models (an architecture this vLLM lacks): pydantic's header is not
    read as an argument error there, the reason under it names the cause."""
    log = tmp_path / "engine.log"
    log.write_text("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
                   "  Value error, Model architectures ['Qwen3NextForCausalLM'] are not supported for now. " + _PYDANTIC + "\n")
    assert findings_of(log)[0].code != "load.config_invalid"


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), [
    # vllm/config.py CacheConfig.verify_with_parallel_config: above 70% of host RAM the engine refuses --swap-space
    ("vllm-swap-too-large", ["ValueError: Too large swap space. 64.00 GiB out of the 62.50 GiB total CPU memory is allocated for the "
                             "swap space."], "load.config_invalid", "Too large swap space", "--swap-space 0"),
    # the kubelet's HTTP probe quotes Go's client timeout (pkg/probe/http): the probe gave up, not a client of the API
    ("kubelet-readiness-timeout", ['Warning  Unhealthy  12s (x3 over 32s)  kubelet  Readiness probe failed: Get '
                                   '"http://10.244.1.5:8000/health": context deadline exceeded (Client.Timeout exceeded while '
                                   'awaiting headers)'], "load.startup_timeout", "Readiness probe failed", None),
    # libnvidia-container quoting NVML_ERROR_LIB_RM_VERSION_MISMATCH: a driver mismatch, not a missing GPU
    ("container-cli-nvml-mismatch", ["nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown"],
     "load.cuda_mismatch", "driver/library version mismatch", "cat /proc/driver/nvidia/version; nvidia-smi"),
    # transformers' bitsandbytes quantizer (quantizers/quantizer_bnb_4bit.py): device_map put modules off the GPU
    ("bnb-modules-off-gpu", ["ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit "
                             "the quantized model. If you want to dispatch the model on the CPU or the disk while keeping these modules "
                             "in 32-bit, you need to set `llm_int8_enable_fp32_cpu_offload=True` and pass a custom `device_map` to "
                             "`from_pretrained`."], "load.weights_oom", "enough GPU RAM to fit the quantized model", None),
    # c10/core/impl/alloc_cpu.cpp: the CPU allocator's NULL branch, host RAM ("not enough memory" is no GPU OOM)
    ("cpu-allocator-not-enough", ["RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: "
                                  "you tried to allocate 4294967296 bytes."], "load.host_oom", "DefaultCPUAllocator", None),
    # multiprocessing.shared_memory under vLLM's shm_broadcast queue: the words name no file, the raising frame names /dev/shm's API
    ("shared-memory-frame", ["Traceback (most recent call last):",
                             '  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/device_communicators/shm_broadcast.py", '
                             "line 195, in __init__",
                             "    self.shared_memory = shared_memory.SharedMemory(create=True, size=self.total_bytes_of_buffer)",
                             '  File "/usr/lib/python3.12/multiprocessing/shared_memory.py", line 104, in __init__',
                             "    os.ftruncate(self._fd, size)",
                             "OSError: [Errno 28] No space left on device"], "load.shm_insufficient", "No space left on device", None),
], ids=lambda x: x if isinstance(x, str) and " " not in x and len(x) < 40 else None)
def test_owned_and_refused_wordings(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_the_swap_space_warning_is_not_the_refusal(tmp_path) -> None:
    """vLLM warns 'Possibly too large swap space' above 40% and goes on; only the ValueError above
    70% refuses the argument (vllm/config.py): the warning's line alone is no config error."""
    log = tmp_path / "engine.log"
    log.write_text("WARNING 06-30 09:24:54 config.py:131] Possibly too large swap space. 16.00 GiB out of the 32.00 GiB total CPU "
                   "memory is allocated for the swap space.\n")
    assert "load.config_invalid" not in [f.code for f in findings_of(log)]


@pytest.mark.parametrize(("line", "evidence"), [
    ("Error: Detected XID 79 for GPU 0", "Xid 79"),  # DCGM_FR_XID_ERROR: the title names the Xid
    ("Error: GPU 5 had uncorrectable memory errors and row remapping failed.", "row remapping failed"),
])
def test_dcgm_health_messages_are_gpu_faults(tmp_path, line: str, evidence: str) -> None:
    """NVIDIA DCGM's health/diag wordings (dcgmlib/dcgm_errors.h) name a GPU hardware fault."""
    log = tmp_path / "dcgmi.log"
    log.write_text(line + "\n")
    top = findings_of(log)[0]
    assert top.code == "load.gpu_fault"
    assert evidence in top.title or any(evidence in e for e in top.evidence), (top.title, top.evidence)


@pytest.mark.parametrize("line", [
    # TGI launcher/src/main.rs: the shard died of SIGBUS (signal 7 on Linux), TGI's classic too-small /dev/shm
    "2024-01-01T00:00:00.000000Z ERROR text_generation_launcher: Shard process was signaled to shutdown with signal 7",
    # a shell's or container runtime's 128 + 7
    "vllm-server exited with code 135",
    # torch.distributed.elastic's ChildFailedError report (negative signal number)
    "  exitcode  : -7 (pid: 1234)",
])
def test_sigbus_is_shared_memory(tmp_path, line: str) -> None:
    """SIGBUS (7) is what a write past the end of a full /dev/shm gets: the exit number states the cause."""
    log = tmp_path / "engine.log"
    log.write_text(line + "\n")
    top = findings_of(log)[0]
    assert top.code == "load.shm_insufficient", [f.code for f in findings_of(log)]
    assert top.fixes[0].command == "--ipc=host"
