"""The event grammar: one clean log message -> typed events with their numbers.

Each rule names an event kind and the regular expression of the engine's (or library's) own
wording, taken from real logs (shared/corpus, shared/real) and the engines' sources. Named groups
become `values`, converted to numbers where they look like numbers ("1,192,160" -> 1192160,
"462.00 MiB" -> GiB). No decisions here: which finding an event means is the checks' business.
The phase an out-of-memory happened in is a fact about the log (where it was), tracked by
`PhaseTracker` from the start-up milestones and the frames of the traceback around it.

Two sources of rules: the hand regexes below (wordings with several alternatives, tuned on real
logs) and the message catalogue (doctor/data/catalogue/*.jsonl, compiled by catalogue.py): one
template per message as the engine's or client's source writes it, with where it comes from.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from dataclasses import dataclass

from llm_doctor.logparse import catalogue, frames, prefilter

_NUM = r"\d[\d,]*(?:\.\d+)?"
_SIZE = _NUM + r"\s*[KMGT]i?B"


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    fatal: bool = True  # an error that stops the engine (vs. a warning / a milestone)
    # literals one of which every match contains (doctor.logparse.prefilter): a line holding
    # none of them is not tried against the pattern (most rules are skipped on most lines)
    literals: tuple[str, ...] = ()
    # the line only echoes a failure stated elsewhere ("failed to load model"): it names no cause,
    # so when nothing else does, the failure reader (failures.py) still reports it
    echo: bool = False
    # a catalogue template: where its wording comes from (owner/repo@ref:path) and whose it is
    source: str = ""
    engine: str = ""


def _status(code: int) -> str:
    """An HTTP status in the words clients print it ("Error code: 429", "HTTP 401", '"code": 401')."""
    # separators spelled out (not \W{0,3}) so that the prefilter can require "code: 429", not any "429"
    return (rf"(?:HTTP(?:/[12](?:\.[01])?)?|status(?:[ _]code)?|Error code|\"code\")(?:\": ?|\" |: ?|=| ){code}\b|"
            rf"\b{code} (?:Client Error|Unauthorized|Too Many)")


_INLINE_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")


def _r(kind: str, pattern: str, fatal: bool = True, flags: int = re.I, echo: bool = False) -> Rule:
    """A hand rule, its regex compiled at its first search (catalogue.LazyPattern: most rules are never
    searched on a given log, and compiling them all was ~25 ms of every start-up); its literals are
    read from the source (prefilter.literals, remembered on disk). One that sets global flags inline is compiled now."""
    compiled = re.compile(pattern, flags) if _INLINE_FLAGS.match(pattern) else catalogue.LazyPattern(pattern, flags)
    return Rule(kind, compiled, fatal, tuple(prefilter.literals([compiled])), echo)  # type: ignore[arg-type]


# the compilers and build tools that engines' kernels are JIT-built with (torch.utils.cpp_extension, FlashInfer, Triton,
# DeepGEMM call them through subprocess): CPython's _execute_child raises FileNotFoundError(errno, msg, <the program>), so
# "[Errno 2] No such file or directory: 'ninja'" is a missing tool in the environment, not a missing model file
TOOLCHAIN = r"(?:ninja|nvcc|hipcc|gcc|g\+\+|cc|c\+\+|clang|clang\+\+|cmake|make|ld)"


# a sentence about a stream (not advice, not a fix), for the rules of a stream held back in between
_STREAM_SAID = (
    r"^(?!.*\b(?:to (?:avoid|prevent)|avoids?|prevents?|fix(?:es|ed|ing)?|disabl\w+|turn\w* off|should|make sure|ensure|"
    r"if you|in case|without buffering)\b)"
    r"(?=.*\b(?:stream(?:s|ed|ing)?|SSE|server[- ]sent|event[- ]?stream|tokens?|chunks?|deltas?|output|response|answer|reply)\b).*?"
)


# Ordered: the first hand rule that matches a message wins, so specific wordings come before generic ones.
HAND_RULES: tuple[Rule, ...] = (
    # --- KV cache capacity ------------------------------------------------------------------
    # vLLM V0 (worker.py raise_if_cache_size_invalid, v0.2-v0.10): "The model's max seq len ({max_model_len}) is larger
    # than the maximum number of tokens that can be stored in KV cache ({max_seq_len}). Try increasing ...": a paste
    # may cut it before the capacity or retell it without the numbers
    _r(
        "kv_cache_too_small",
        r"max seq len(?: \((?P<max_seq_len>\d+)\))? is larger than the maximum number of tokens that can be stored "
        r"in KV cache(?:\s*\((?P<kv_tokens>\d+)\))?",
    ),
    # vLLM V1 (v1/core/kv_cache_utils.py _check_enough_kv_cache_memory, v0.7-v0.11): "To serve at least one request with
    # the models's max seq len ({max_model_len}), ({needed} GiB KV cache is needed, which is larger than the available KV
    # cache memory ({available} GiB). Based on the available memory, the estimated maximum model length is {n}. Try
    # ...". Pasted into an issue it is often wrapped over two or three lines: each piece is a rule of its own (the head
    # with the length asked, the needed/available bytes, the estimate) and load.kv_cache joins the adjacent pieces
    _r(
        "kv_cache_too_small",
        r"max seq len \((?P<max_seq_len>\d+)\),?\s*\(?(?P<needed>" + _SIZE + r") KV cache is needed, which is larger "
        r"than the available KV cache memory\s*\((?P<available>" + _SIZE + r")\)"
        r"(?:.*?estimated maximum model length is (?P<estimated_max_len>\d+))?",
    ),
    _r(
        "kv_cache_too_small",
        r"(?P<needed>" + _SIZE + r") KV cache is needed, which is larger than the available KV cache(?: memory)?"
        r"(?:\s*\((?P<available>" + _SIZE + r")\))?(?:.*?estimated maximum model length is (?P<estimated_max_len>\d+))?",
    ),
    _r("kv_cache_too_small", r"To serve at least one request with the model\S{0,3} max seq len \((?P<max_seq_len>\d+)\)"),
    _r("kv_cache_too_small", r"estimated maximum model length is (?P<estimated_max_len>\d+)"),
    _r("kv_cache_alloc_failed", r"llama_kv_cache_init: failed to allocate buffer|failed to allocate buffer for kv cache"),
    _r("kv_cache_alloc_failed", r"llama_kv_cache_init\(\) failed"),
    _r(
        "no_kv_memory",
        r"No available memory for the cache blocks|Not enought? memory\. Please try to increase --mem-fraction-static"
        r"|num_gpu_blocks.*(?:<=|must be greater than) 0|(?:number of|#) GPU blocks:? -?0\b"
        r"|No available memory for the KV cache|KV cache memory is negative",
    ),
    _r("no_kv_memory", r"insufficient memory for kv ?cache|not enough memory for (?:the )?KV cache"),
    _r(
        "free_memory_low",
        r"Free memory on device (?:\S+ )?\((?P<free>" + _NUM + r")/(?P<total>" + _NUM + r") GiB\) on startup is less "
        r"than desired GPU memory utilization \((?P<util>[\d.]+), (?P<requested>" + _NUM + r") GiB\)",
    ),
    # the same refusal (vllm/v1/worker/gpu_worker.py init_device, v0.8-v0.11) pasted over two lines: its halves
    # are pieces that load.gpu_memory_free joins, as load.kv_cache joins vLLM's wrapped KV refusal
    _r(
        "free_memory_low",
        r"Free memory on device (?:\S+ )?\((?P<free>" + _NUM + r")/(?P<total>" + _NUM + r") GiB\) on startup is less than",
    ),
    _r("free_memory_low", r"desired GPU memory utilization \((?P<util>[\d.]+), (?P<requested>" + _NUM + r") GiB\)"),
    _r(
        "free_memory_low",
        r"(?:requested|desired) (?:GPU )?memory.*(?:greater|more|larger) than.*free|"
        r"Not enough memory.*(?:other processes|free memory)",
    ),
    # --- out of memory (GPU) ------------------------------------------------------------------
    _r(
        "cuda_oom",
        r"(?:CUDA|HIP) out of memory\. Tried to allocate (?P<tried>" + _SIZE + r") \(GPU (?P<gpu>\d+); (?P<total>" + _SIZE
        + r") total capacity; (?P<allocated>" + _SIZE + r") already allocated; (?P<free>" + _SIZE + r") free",
    ),
    _r(
        "cuda_oom",
        r"(?:CUDA|HIP) out of memory\. Tried to allocate (?P<tried>" + _SIZE + r")"
        r"(?:.*?total capac\w* of (?P<total>" + _SIZE + r") of which (?P<free>" + _SIZE + r") is free)?"
        r"(?:.*?this process has (?P<this_process>" + _SIZE + r") memory in use)?",
    ),
    _r("cuda_oom", r"(?:CUDA|HIP) out of memory|OutOfMemoryError: CUDA|CUDA error: out of memory|cudaErrorMemoryAllocation"),
    _r(
        "ggml_alloc_failed",
        r"allocating (?P<alloc_mib>" + _NUM + r") MiB on device (?P<device>\d+): (?:cuda|hip)Malloc failed",
    ),
    # ggml-alloc.c ggml_gallocr_reserve_n: the graph allocator reserving the compute buffers (GGML_BACKEND_BUFFER_USAGE_COMPUTE),
    # after the weights and the KV cache; the weights fail in alloc_tensor_range ("unable to allocate CUDA0 buffer")
    _r("ggml_compute_buffers", r"ggml_gallocr_reserve_n: failed to allocate (?P<buffer>\w+) buffer of size (?P<alloc_bytes>\d+)"),
    _r("ggml_alloc_failed", r"failed to allocate (?P<buffer>\w+) buffer of size (?P<alloc_bytes>\d+)"),
    # the CPU buffer type's own failure is host RAM (ggml-backend.cpp: ggml_aligned_malloc): the catalogue's host_oom entry
    _r("ggml_alloc_failed", r"ggml_backend_(?!cpu_)\w+_buffer_type_alloc_buffer: failed to allocate buffer of size (?P<alloc_bytes>\d+)"),
    _r("ggml_compute_buffers", r"failed to allocate compute buffers"),
    _r("ggml_weights_failed", r"unable to allocate backend buffer"),
    # --- host memory --------------------------------------------------------------------------
    _r("host_oom", r"OOMKilled|Out of memory: Kill(?:ed)? process|oom-kill|invoked oom-killer"),
    # Python's negative exitcode is the signal: SGLang's launcher after "Rank 0 scheduler is dead. Please check if there are
    # relevant logs." logs f"Exit code: {proc.exitcode}" (entrypoints/engine.py _launch_subprocesses, v0.4-v0.5), -9 for a
    # scheduler killed with SIGKILL (the OOM killer, a cgroup limit), which raises nothing of its own
    _r("host_oom", r"(?:exit(?:ed)?(?: with)?(?: code| status)?|Exit Code:?)\s*137\b|signal 9 \(SIGKILL\)|SIGKILL|"
       r"^Exit code:?\s*-9$"),
    # signal 7 is SIGBUS on Linux (exit status 135 = 128 + 7; torch elastic's exitcode -7, SGLang's "scheduler died during
    # initialization (exit code: -7)": Python's negative exitcode is the signal; TGI launcher/src/main.rs "Shard
    # process was signaled to shutdown with signal 7"): a write past the end of a full /dev/shm
    _r("shm_too_small", r"(?:exit(?:ed)?(?: with)?(?: code| status)?|Exit Code:?)\s*135\b|exit ?code\s*:?\s*-7\b|signal 7 \(SIGBUS\)|"
       r"signaled to shutdown with signal 7\b"),
    # Ray's memory monitor kills a worker: ray.exceptions.OutOfMemoryError, and the worker's exit type
    # (src/ray/protobuf common.proto WorkerExitType NODE_OUT_OF_MEMORY: "Worker exit type: NODE_OUT_OF_MEMORY")
    _r("host_oom", r"ray\.exceptions\.OutOfMemoryError|node running low on memory|Task was killed due to the node running low|"
       r"\bNODE_OUT_OF_MEMORY\b", flags=0),
    _r(
        "host_oom",
        r"model requires more system memory \((?P<required>" + _SIZE + r")\) than is available \((?P<available>"
        + _SIZE
        + r")\)",
    ),
    # Ollama's older refusal before loading (the model larger than RAM + VRAM)
    _r("host_oom", r"requested model \((?P<required>" + _SIZE + r")\) is too large for this system \((?P<available>" + _SIZE + r")\)"),
    # Python's own MemoryError (host RAM), not a class whose name ends in it: torch's OutOfMemoryError is the GPU
    # allocator's (torch/cuda/memory.py), and Ray names the worker's class in RayTaskError(OutOfMemoryError)
    _r("host_oom", r"Cannot allocate memory|std::bad_alloc|(?<!\w)MemoryError\b"),
    _r("swap_space_large", r"Possibly too large swap space\. (?P<swap>" + _SIZE + r") out of the (?P<total>" + _SIZE + r")", False),
    _r("killed", r"^Killed$|^Killed\s+\S+|^\S*\s*Killed\s+(?:python|vllm|\./)", flags=0),
    # zsh's words for the same SIGKILL (Src/jobs.c printjob, signal names from Src/signames2.awk, lower case): the
    # foreground job's "zsh: killed     vllm serve ...", a background job's "[1]  + 12345 killed     python ..."
    _r("killed", r"^zsh: killed\s+\S|^\[\d+\]\s+[+-]?\s*\d+ killed\s+\S", flags=0),
    # --- /dev/shm, NCCL, distributed -----------------------------------------------------------
    _r(
        "shm_too_small",
        # NCCL 2.7's include/shm.h names the segment without its /dev/shm/ directory ("nccl-shm-recv-...")
        r"(?:Error while creating shared memory segment|failed to extend) (?P<path>(?:/dev/shm/|nccl-)\S+?)(?: to (?P<size>\d+) bytes|"
        r" \(size (?P<segment>\d+)\))",
    ),
    _r(
        "shm_too_small",
        r"memory request exceeds memory available in /dev/shm\. The request is for (?P<requested_bytes>\d+) bytes, "
        r"and the amount available is (?P<available_bytes>\d+) bytes",
    ),
    # Ray's warning (python/ray/_private/services.py) ends with the size it wants: "...you can increase /dev/shm size
    # by passing '--shm-size=10.24gb' to 'docker run'" (its object store * 1.1, in GiB)
    _r("shm_too_small", r"/dev/shm has only (?P<available_bytes>\d+) bytes available(?:.*?--shm-size=(?P<suggested_gb>\d+(?:\.\d+)?)gb\b)?"),
    _r("shm_too_small", r"No space left on device.*(?:/dev/shm|shm)|(?:/dev/shm|shm).*No space left on device"),
    _r(
        "shm_too_small",
        r"object store.*(?:requested|of size) (?P<requested_bytes>\d+).*?(?:only|available)\D*(?:(?P<available_bytes>\d+))?"
        r".*(?:/dev/shm|shm-size|shared memory)",
    ),
    _r("shm_too_small", r"bus error.*(?:shared memory|shm)|insufficient shared memory"),
    # SIGBUS in an engine's worker: a shared-memory segment past what a container's 64 MB /dev/shm backs
    _r("shm_too_small", r"Fatal Python error: ?Bus error|^Bus error \(core dumped\)"),
    _r(
        "dist_timeout",
        r"Timed out after (?P<timeout>\d+) seconds waiting for clients\. (?P<joined>\d+)/(?P<world>\d+) clients joined",
    ),
    _r("nccl_error", r"NCCL error[^\n]*?(?P<detail>unhandled system error|unhandled cuda error|internal error|invalid usage|remote process exited|timeout)"),
    _r("nccl_error", r"ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclRemoteError|NCCL WARN|NCCL communicator was aborted"),
    _r("nccl_error", r"DistBackendError|Watchdog caught collective operation timeout|ProcessGroupNCCL.*(?:timeout|Timeout)"),
    # --- GPU visibility / parallelism -----------------------------------------------------------
    _r(
        "tp_heads",
        r"(?:Total number of )?attention heads \((?P<heads>\d+)\) must be divisible by tensor parallel size \((?P<tp>\d+)\)",
    ),
    _r("tp_heads", r"(?P<what>num_heads|num_attention_heads|num_key_value_heads|heads) \(?(?P<heads>\d+)\)? (?:is )?not divisible by (?:the )?(?:num_shard|num_shards|tp|world size|tensor parallel size)[ =:(]*(?P<tp>\d+)"),
    _r(
        "tp_heads",
        r"`?num_heads`? must be divisible by `?num_shards`? \(got `?num_heads`?: (?P<heads>\d+) and `?num_shards`?: (?P<tp>\d+)",
    ),
    _r("tp_gpus", r"(?:World size|tensor_parallel_size|tensor parallel size) \((?P<tp>\d+)\) is larger than the number of available GPUs \((?P<gpus>\d+)\)"),
    _r("tp_gpus", r"number of (?:available )?GPUs (?:per node )?\(?(?P<gpus>\d+)\)? (?:is )?not divisible by (?:the )?(?:tensor parallel size|tp size|tp)[ (]*(?P<tp>\d+)"),
    _r(
        "quant_partition",
        r"(?:output_partition_size|input_size_per_partition) = (?P<size>\d+) is not divisible by (?:weight quantization block_\w|min_thread_\w) = (?P<block>\d+)",
    ),
    _r("quant_partition", r"not aligned with the quantized weight shape|too large tensor parallel size"),
    # the Marlin kernels' shape checks (vLLM csrc/quantization/*marlin*): a TP rank's slice the kernel cannot tile
    _r("quant_partition", r"\b(?:prob|size)_[mnk] = (?P<size>\d+),? is not divisible by \w+ = (?P<block>\d+)"),
    _r("not_divisible", r"(?P<a>\d+) is not divisible by (?P<b>\d+)"),
    _r("device_ordinal", r"invalid device ordinal"),
    _r(
        "gpu_not_visible",
        r"No CUDA GPUs are available|Failed to infer device type|no usable GPU found|Found no NVIDIA driver|"
        r"CUDA driver initialization failed|could not select device driver|no CUDA-capable device is detected|"
        r"Torch not compiled with CUDA enabled|Is CUDA available: False|NVIDIA-SMI has failed|"
        r"RuntimeError: No HIP GPUs are available|Device string must not be empty|libnvidia-ml\.so\.1: cannot open|"
        # the driver's own libcuda (NVIDIA/libnvidia-container src/nvc_info.c compute_libs: "libcuda.so", the CUDA driver
        # library, mounted into a container only with its GPUs): not the CUDA runtime a wheel brings (libcudart, cuBLAS)
        r"libcuda\.so(?:\.1)?: cannot open shared object file|"
        # Ollama's discovery (gpu.go) before it falls back to the CPU
        r"no compatible GPUs were discovered|"
        # moby daemon/runtime_unix.go: the host's Docker has no NVIDIA runtime registered (nvidia-container-toolkit not configured)
        r"unknown or invalid runtime name: nvidia",
    ),
    # NVIDIA's container images (nvidia_entrypoint.sh) at start: the container was given no GPU; what runs next runs on the CPU
    _r("gpu_not_visible", r"The NVIDIA Driver was not detected\.\s+GPU functionality will not be available", False),
    # --- dtype / CUDA / kernels -------------------------------------------------------------
    _r(
        "dtype_unsupported",
        r"Bfloat16 is only supported on GPUs with compute capability of at least (?P<need>[\d.]+)\.?"
        r"(?:.*?has compute capability of (?P<cc>[\d.]+))?",
    ),
    _r("dtype_unsupported", r"type fp8\w* not supported in this architecture|fp8e4nv not supported"),
    # (not transformers' FP8 quantizer, "FP8 quantized models is only supported on GPUs with compute capability >= 9.0": the
    # checkpoint's quantization method, a catalogue template, whose warning form a terminal's cut must not make a dtype error)
    _r(
        "dtype_unsupported",
        r"(?:fp8|float8|FP8)(?! quantized models)[^.]*(?:not supported|requires|only supported)[^.]*(?:compute capability|sm_?\d+|Hopper|Ada)",
    ),
    # a compute capability refused for a dtype the line names is the dtype's; refused outright, the GPU is below the
    # build's kernels (vLLM's "GPUs with compute capability below 7.0", Ollama's "CUDA GPU is too old"): no dtype fixes it
    _r("dtype_unsupported", r"^(?=.*\b(?:bfloat16|bf16|float16|fp16|half|fp8|float8|e4m3|e5m2)\b)"
       r".*compute capability (?P<cc>[\d.]+).*(?:not supported|too old|does not support)"),
    _r("cuda_mismatch", r"compute capability (?P<cc>[\d.]+).*(?:not supported|too old|does not support)"),
    # a build whose kernels start at a GPU generation ("SGlang only supports sm 75 and above", flash-attn's "only supports
    # Ampere GPUs or newer" is a template): the GPU is below the build's floor, unless the line names the dtype it refuses
    # and flashinfer's check_cuda_arch ("FlashInfer requires GPUs with sm75 or higher", before 0.2 "requires sm75+"); a floor
    # stated for a dtype or a quantization is theirs
    _r("cuda_mismatch", r"^(?!.*\b(?:bfloat16|bf16|fp8|float8|fp4|int4|int8|marlin|awq|gptq|quantiz\w*)\b)"
       r".*\b(?:only supports?|requires?) (?:a )?(?:GPUs? )?(?:with )?(?:sm|compute capability)[ _]?(?:of )?\d+(?:\.\d+)?"
       r"(?:\+|\s*(?:and|or)\s+(?:above|newer|later|higher))"),
    # TensorRT-LLM's TLLM_CHECK_WITH_INFO(false, "Unsupported Arch") in its kernels (cutlass_kernels/cutlass_preprocessors.cpp
    # @05316d3 getLayoutDetailsForTransform: no cutlass layout for this SM): the GPU's architecture, not the model's
    _r("cuda_mismatch", r"Assertion failed: Unsupported Arch\b"),
    # cuBLAS refusing a bfloat16 GEMM (CUDA_R_16BF) on a GPU without bfloat16 tensor cores (V100, T4): the dtype
    _r("dtype_unsupported", r"^(?=.*\bCUDA_R_16BF\b).*CUBLAS_STATUS_(?:ARCH_MISMATCH|NOT_SUPPORTED)"),
    _r(
        "cuda_mismatch",
        # the CUDA runtime's and driver's own names for a binary without code for this GPU or toolchain (cudaGetErrorString /
        # cuGetErrorName: cudaErrorNoKernelImageForDevice, cudaErrorSymbolNotFound, cudaErrorJitCompilerNotFound), cuBLAS's
        # CUBLAS_STATUS_ARCH_MISMATCH, cuDNN v8's "GET was unable to find an engine" (aten/src/ATen/native/cudnn/Conv_v8.cpp),
        # torch's dispatcher for a torchvision built against another torch, the dynamic loader for a wheel built on a newer glibc
        r"\bPTX JIT compiler library not found|CUDA error: named symbol not found|"
        r"\b(?:CUDA_ERROR_NO_BINARY_FOR_GPU|cudaErrorNoKernelImageForDevice|CUDA_ERROR_UNSUPPORTED_PTX_VERSION|"
        r"cudaErrorUnsupportedPtxVersion|CUDA_ERROR_JIT_COMPILER_NOT_FOUND|cudaErrorJitCompilerNotFound|CUBLAS_STATUS_ARCH_MISMATCH)\b|"
        r"GET was unable to find an engine to execute this computation|operator torchvision::\w+ does not exist|"
        r"version [`'](?P<glibc>GLIBC(?:XX)?_[\d.]+)['`] not found",
    ),
    _r(
        "cuda_mismatch",
        r"no kernel image is available for execution|CUDA driver version is insufficient|"
        r"The NVIDIA driver on your system is too old|"
        r"undefined symbol: \S*(?:nvJitLink|cuda|cublas|cusparse|_ZN|c10)\S*|"
        r"(?P<lib>lib(?:cudart|cublas\w*|cudnn\w*|nccl|nvrtc|cusparse)\.so(?:\.[\d.]+)?): cannot open shared object file|"
        r"is not compatible with the current PyTorch installation|sm_\d+ is not compatible|"
        r"CUDA error: the provided PTX was compiled with an unsupported toolchain|"
        r"not compiled for (?:this|your) (?:GPU|architecture)|unsupported GPU architecture|"
        # TensorRT's runtime (libnvinfer, IRuntime::deserializeCudaEngine: "Error Code 1: Serialization (Serialization
        # assertion stdVersionRead == kSERIALIZATION_VERSION failed.Version tag does not match. Note: Current Version: 228,
        # Serialized Engine Version: 237)"): a plan built by another TensorRT version
        r"Serialization assertion \w*VersionRead ?== ?k\w*SERIALIZATION_VERSION failed|Serialized Engine Version: \d+",
    ),
    # --- GPU faults -------------------------------------------------------------------------
    # (an Xid said not to have happened is none: a tuning note's "Zero Xid 43/13, no EngineDead")
    _r("gpu_fault", r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<xid>\d+)|(?<!\bzero )(?<!\bno )(?<!\bwithout )(?<!\bany )\bXid (?P<xid2>\d+)\b"),
    _r(
        "gpu_fault",
        r"uncorrectable ECC error|ECC error encountered|GPU has fallen off the bus|GPU is lost|"
        r"unrecoverable error|CUDA error: unspecified launch failure|cudaErrorECCUncorrectable",
    ),
    _r("illegal_memory_access", r"an illegal memory access was encountered|illegal instruction was encountered"),
    # --- model files, architectures, remote code --------------------------------------------
    # a checkpoint tensor the engine's model class has no parameter for: its implementation is older than the checkpoint
    # a checkpoint's packed quantized tensors (AutoAWQ WQLinear_GEMM / AutoGPTQ QuantLinear register qweight, qzeros, scales,
    # g_idx) that the engine's unquantized layers have no parameter for (vLLM v0.2 models/*.py load_weights
    # `param = state_dict[name]`): the checkpoint's quantization was not asked for, not a model the engine does not know
    _r("quant_unsupported", r"^KeyError: '(?P<qparam>(?:model|transformer|language_model)\.[\w.]+\.(?:qweight|qzeros|g_idx))'"),
    _r("weight_key_unknown", r"^KeyError: '(?P<param>(?:model|transformer|language_model|vision\w*|visual|lm_head)\.[\w.]+)'"),
    # Meta/Mistral-native tensor names (consolidated*.safetensors, *.pth) read by a Hugging Face-format loader:
    # the folder holds weights in the other format, not an engine too old for the model
    _r(
        "model_missing",
        r"KeyError: '(?P<native_param>(?:layers\.\d+\.(?:attention\.w[qkvo]|feed_forward\.w[123]|attention_norm|ffn_norm)"
        r"|tok_embeddings)\.weight)'",
    ),
    # llama.cpp's loader finding the file's tensors other than its build's architecture code lays them out (src/llama-model-
    # loader.cpp check_tensor_dims, older llama.cpp create_tensor: "%s: tensor '%s' not found", "%s: tensor '%s' has wrong
    # shape; expected %s, got %s"): a GGUF of a newer converter (tied output weights, a new attention layout) read by an
    # older build (the catalogue's llamacpp.jsonl has check_tensor_dims' "not found" alone)
    _r("arch_unsupported", r"\b(?:check_tensor_dims|create_tensor): tensor '(?P<tensor>[\w.]+)' "
       r"(?:not found|has wrong shape)"),
    _r(
        "remote_code",
        r"requires you to execute the (?:configuration|modeling)? ?file|"
        r"(?:set|pass) the (?:option|argument) `?trust_remote_code=True`?|contains custom code which must be executed",
    ),
    _r(
        "arch_unsupported",
        r"Model architectures? \[?'?(?P<arch>[\w]+)'?\]? (?:are|is) not supported|"
        r"has model type `(?P<model_type>[\w.-]+)` but Transformers does not recognize|"
        r"unknown model architecture: '(?P<gguf_arch>[\w.-]+)'|"
        r"model type `?(?P<model_type2>[\w.-]+)`? (?:is )?not (?:yet )?supported|requires a newer version|"
        r"KeyError: '(?P<model_type3>[\w.-]+)'.*CONFIG_MAPPING|is not supported for now|Unsupported architecture|"
        # the engine's model code reads a config field this model's (newer) config class does not have
        r"'(?P<config_class>\w+)Config' object has no attribute '(?P<attribute>\w+)'",
    ),
    _r(
        "hf_access",
        # (requests' raise_for_status names the URL: a 401/403 from any other host is the API refusing the key, http_response)
        r"(?P<status>401|403) Client Error(?!: \w+ for url: (?!https?://(?:[\w-]+\.)*(?:huggingface\.co|hf\.co|hf-mirror\.com|modelscope\.cn)\b))|"
        r"GatedRepoError|Access to model \S+ is restricted|"
        r"You are trying to access a gated repo|Cannot access gated repo|Invalid (?:user )?token|"
        r"(?P<status2>401) Unauthorized.*huggingface",
    ),
    _r(
        "model_missing",
        # (requests' raise_for_status names the URL: a 404 from any other host is the API's answer, http_response)
        # (the Hub's inference router, router.huggingface.co / api-inference, answers an API request: its 404 is the model id's)
        r"(?P<status>404) Client Error(?!: Not Found for url: (?!https?://(?!(?:router|api-inference)\.huggingface\.co\b)"
        r"(?:[\w-]+\.)*(?:huggingface\.co|hf\.co|hf-mirror\.com|modelscope\.cn)\b))|"
        r"RepositoryNotFoundError|Repository Not Found|Repo id must be|HFValidationError|"
        r"does not appear to have a file named (?P<file>[\w.-]+)|is not a local folder and is not a valid model identifier|"
        r"Can't load (?:the )?(?:config|tokenizer|model) for|No such file or directory: '(?!" + TOOLCHAIN + r"')(?P<path>[^']+)'|"
        r"Invalid repository ID or local directory|We couldn't connect to 'https://huggingface\.co'|"
        r"LocalEntryNotFoundError|bad magic|invalid model file|not a valid gguf|safetensors_rust\.SafetensorError|"
        r"gguf_init_from_file: failed to (?:open|read)|failed to open GGUF file|(?<!Input )tensor '[\w.]+' (?:not found|has wrong shape)|"
        r"Cannot find any model weights|No model weights found|model path (?:does not exist|not found)",
    ),  # (not TensorRT-LLM's "Input tensor '...' not found": an engine input its runtime lacks, catalogue trtllm.jsonl)
    # llama.cpp / engines print these after ANY load failure: the cause is the line before
    _r("load_failed", r"failed to load model|error loading model|unable to load model|Failed to load model", False, echo=True),
    # --- quantization -----------------------------------------------------------------------
    _r(
        "quant_unsupported",
        r"Unknown quantization method|argument --quantization(?:/-q)?: invalid choice: '(?P<method>[\w-]+)'|"
        r"quantization method (?P<method2>[\w-]+) is not supported|Quantization method .* is not supported|"
        r"(?P<method3>\w+) quantization is currently not supported|is not supported for quantization|"
        r"Quantization scheme is not supported|does not match the quantization method specified in the `quantization` argument|"
        r"\w*MoEMethod\.create_weights\(\) missing|"
        # a quantization kernel this build of the engine's ops library lacks (a CPU or ROCm build, an old wheel)
        r"'_OpNamespace' '\w+' object has no attribute '(?P<op>\w*(?:marlin|gptq|awq|fp8|gguf|machete|cutlass_scaled|"
        r"int8|aqlm|squeezellm|exl2|w8a8)\w*)'",
    ),
    # --- engine arguments -------------------------------------------------------------------
    _r(
        "config_invalid",
        r"User-specified (?P<field>max_model_len|context_length) \((?P<value>\d+)\) is greater than the derived \w+ "
        r"\((?:\w+=)?(?P<derived>\d+)",
    ),
    _r(
        "config_invalid",
        r"error: unrecognized arguments: (?P<flag>.+)|error: unknown argument: (?P<flag2>\S+)|"
        r"error: argument (?P<flag3>--[\w-]+)[^:]*: invalid (?:choice|\w+ value)|error: the following arguments are required|"
        r"invalid value '[^']*' for '(?P<flag4>--[\w-]+)|unexpected argument '(?P<flag5>[^']+)'|"
        # clap 2/3 (TGI's launcher before clap 4): "error: Found argument '--x' which wasn't expected, or isn't valid in this
        # context"; Go's flag package (llama-swap, Go launchers) and spf13/pflag's (Ollama's cobra CLI)
        r"Found argument '(?P<flag6>[^']+)' which wasn't expected|flag provided but not defined: (?P<flag7>-{1,2}[\w-]+)|"
        r"\bunknown (?:shorthand )?flag: (?P<flag8>'?-{0,2}[\w-]+'?)",
    ),
    # llama-server's 400 for a prompt longer than a slot's context carries both sizes (since PR #15780,
    # after either wording of its message): the fix sizes --ctx-size from them
    _r("context_exceeded", r"exceed_context_size_error\",\s*\"n_prompt_tokens\":\s*(?P<n_prompt_tokens>\d+),\s*\"n_ctx\":\s*(?P<n_ctx>\d+)"),
    # --- start-up timeouts ------------------------------------------------------------------
    _r(
        "startup_timeout",
        r"Timeout (?P<timeout>\d+)s waiting for workers|TimeoutError: result expired|"
        r"(?:Readiness|Liveness|Startup) probe failed|timed out waiting for (?:the )?(?:model|server|engine)|"
        # (not TGI's "Waiting for shard to be ready...": launcher/src/main.rs logs it every 10 s of every load, healthy ones too)
        r"Engine core initialization failed.*timeout|did not (?:become|get) ready",
    ),
    # --- client-side errors (OpenAI/httpx/requests) ------------------------------------------
    _r(
        "hub_unreachable",
        r"(?:huggingface\.co|hf-mirror|hf_hub|modelscope)\S*.*(?:SSLError|Max retries exceeded|ConnectionError|"
        r"timed out|Connection refused|Network is unreachable|Temporary failure)|"
        r"(?:OfflineModeIsEnabled|offline mode is enabled)|couldn't connect to 'https://huggingface\.co'",
    ),
    _r(
        "http_response",
        r"\"(?P<method>GET|POST|PUT|DELETE|PATCH) (?P<path>/\S*) HTTP/[\d.]+\" (?P<status>[45]\d\d)|"
        r"request: (?P<method2>GET|POST) (?P<path2>/\S*) \S+ (?P<status2>[45]\d\d)\b|"
        r"^< HTTP/[\d.]+ (?P<status3>[45]\d\d)\b|(?P<method3>GET|POST) \"?https?://[^/\s]+(?P<path3>/\S*?)\"?: (?P<status4>[45]\d\d) |"
        # requests' raise_for_status (src/requests/models.py: f"{status} Client Error: {reason} for url: {url}")
        # (the Hugging Face Hub's answers are the model download's: model_missing, hub_unreachable)
        r"\b(?P<status7>4\d\d) Client Error: [^\n]{0,60}? for url: https?://(?!(?!(?:router|api-inference)\.huggingface\.co\b)"
        r"(?:[\w-]+\.)*(?:huggingface\.co|hf\.co|hf-mirror\.com|modelscope\.cn)\b)"
        r"[^/\s]+(?P<path6>/[^\s'\")]*)|"
        # httpx's INFO line, as the OpenAI SDK logs every request
        r"HTTP Request: (?P<method4>GET|POST|PUT|DELETE) https?://[^/\s]+(?P<path4>/\S*) \"HTTP/[\d.]+ (?P<status5>[45]\d\d)|"
        # a browser's console (Chrome, Firefox) for a failed fetch: `POST http://host:port/v1/chat/completions 404 (Not Found)`
        r"(?P<method5>GET|POST|PUT|DELETE) https?://[^/\s]+(?P<path5>/\S*) (?P<status6>[45]\d\d) \((?:[A-Z][a-z]+ ?)+\)",
        False,  # an answer, not a failure by itself: a server's access log holds 404s for /favicon.ico
    ),
    # the web framework's own 404 (Go net/http, FastAPI/Starlette, Express, nginx): no such PATH on
    # this server, unlike an API's JSON "model ... does not exist"
    _r(
        "client_route_not_found",
        r"\b404 page not found|\{\s*[\"']detail[\"']\s*:\s*[\"']Not Found[\"']\s*\}|Cannot (?:GET|POST) (?P<path>/\S+)|"
        r"<title>404 Not Found</title>|<h1>Not Found</h1>|"
        # Fastify's (lib/fourOhFour.js: `Route ${req.method}:${req.url} not found`), and a JSON body's bare "Route not found"
        r"\bRoute (?P<method>GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS):(?P<path2>/\S*) not found\b|[\"']message[\"']\s*:\s*[\"']Route not found\b|"
        # the OpenAI API's 404 for a route it does not have, which relays (one-api, new-api) copy: `Invalid URL (POST /v1/responses)`
        # (openai/openai-node#132, openai/openai-python#250): the path decides (a doubled /v1, another API's route)
        r"\bInvalid URL \((?P<method2>GET|POST|PUT|DELETE|PATCH) (?P<path3>/[^\s)]*)\)|"
        # Azure OpenAI's 404 for a URL with no deployment behind it (`{"error":{"code":"404","message": "Resource not found"}}`; a
        # deployment name it does not know is DeploymentNotFound): microsoft/autogen#3953, fixed with the deployment's endpoint URL
        r"\b404\b\W{1,30}(?:message\W{1,5})?Resource not found\b",
    ),
    _r(
        "client_tls",
        r"CERTIFICATE_VERIFY_FAILED|SSLError|SSL: WRONG_VERSION_NUMBER|self[- ]signed certificate|"
        r"unable to get local issuer certificate|certificate verify failed|SSLEOFError|TLS handshake",
    ),
    _r(
        "client_dns",
        r"\[Errno -[23]\] (?:Name or service not known|Temporary failure in name resolution)|"
        # (urllib3 2.x connection.py NameResolutionError: `Failed to resolve '{host}' ({e})`)
        r"getaddrinfo failed|nodename nor servname|Could not resolve host|NameResolutionError|Failed to resolve ['\"][\w.-]+['\"]",
    ),
    _r(
        "client_proxy",
        # urllib3's debug line for a request sent to a forward proxy: the connection is the proxy's and the request
        # line carries the absolute URL (urllib3 connectionpool.py `'%s://%s:%s "%s %s %s" %s %s'`), so a 403/407/5xx
        # there is the proxy refusing or failing to reach the target (an engine's warm-up request to its own
        # 0.0.0.0 port sent through HTTP_PROXY: sgl-project/sglang#9183)
        r'\bhttps?://\S+:\d+ "(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (?P<target>https?://[^\s"]+) HTTP/[\d.]+" (?P<status>40[37]|5\d\d)\b',
    ),
    _r(
        "client_proxy",
        # (urllib3's `ProxyError('Cannot connect to proxy.', <its cause>)` (1.26) and `ProxyError('Unable to connect to proxy',
        # <its cause>)` (2.x) read whole, so that no template that happens to fit inside it, NCCL's "Connect to {} failed : {}",
        # outvotes it; from the requests/openai exception around it on the same line, which the search meets first)
        r"(?:\S*ProxyError\b.*?)?ProxyError\(['\"](?:Cannot|Unable to) connect to proxy\.?['\"], .*|Cannot connect to proxy\.|Tunnel connection failed: [45]\d\d(?: [A-Z][a-z]+)*|"
        r"ProxyError|Unable to connect to proxy|Tunnel connection failed|ERR_PROXY|squid|"
        r"The system returned: <i>|proxy.*(?:502|refused)",
    ),
    _r(
        "client_refused",
        r"\[Errno (?P<errno>111|113|61|10061|110)\] (?:Connection refused|No route to host|Connection timed out)|"
        r"Connection refused|ECONNREFUSED|No route to host|Failed to establish a new connection|"
        r"APIConnectionError|Connection error\.",
    ),
    # (OpenRouter's 402 body: "This request requires more credits, or fewer max_tokens. You requested up to 32000 tokens,
    # but can only afford 0.")
    _r("client_quota", r"insufficient_quota|exceeded your current quota|check your plan and billing|Payment Required|"
       r"requires more credits, or fewer max_tokens|but can only afford \d+|"
       # the Anthropic API's 400 for a workspace past the spend limit its console sets ("You have reached your specified API
       # usage limits. You will regain access on 2026-09-01 at 00:00 UTC."), however a proxy relays it
       r"reached your specified API usage limits|"
       # one-api's (and new-api's) refusals for a key or account with no quota left (relay/controller/helper.go
       # `user quota is not enough` / insufficient_user_quota / pre_consume_token_quota_failed, model/token.go 该令牌额度已用尽,
       # 令牌额度不足, 用户额度不足), answered with 403: the quota, not the key
       r"insufficient_user_quota|pre_consume_token_quota_failed|\buser quota is not enough\b|(?:令牌|用户)额度(?:不足|已用尽)|额度已用尽|"
       # the providers' own words for an account out of money, whatever status carries them: Alibaba DashScope's 400 Arrearage
       # ("Access denied, please make sure your account is in good standing."), xAI's 403 ("Your team ... has either used all
       # available credits or reached its monthly spending limit"), Zhipu's 429 code 1113 (余额不足或无可用资源包: balance too low,
       # no resource package), Moonshot's 429 exceeded_current_quota_error, Cohere's trial key per month (per minute is a rate)
       r"please make sure your account is in good standing|\bArrearage\b|used all available credits or reached its monthly spending limit|"
       r"余额不足或无可用资源包|\bexceeded_current_quota_error\b|\bTrial key, which is limited to \d+ API calls / month\b|"
       # Google's QuotaFailure detail under a 429 RESOURCE_EXHAUSTED ("Quota exceeded for metric: generativelanguage.googleapis.com/
       # generate_content_free_tier_requests, limit: 20"; Vertex AI "Quota exceeded for quota metric ..."): the project's quota,
       # unless the metric is one per minute (Vertex's "... requests per minute"), which is a rate
       r"\bQuota exceeded for (?:quota )?metric\b(?!.{0,200}per.?minute)|"
       + _status(402)),
    _r("client_rate_limit", r"Rate limit reached|rate_limit_exceeded|RateLimitError|Too Many Requests|rate limit you|" + _status(429)),
    _r(
        "client_auth",
        r"Incorrect API key|Invalid API Key|invalid_api_key|AuthenticationError|401 Unauthorized|"
        r"invalid x-api-key|authentication_error|"
        # one-api's refusal of a token it does not know or that has expired (model/token.go ValidateUserToken)
        r"无效的令牌|该令牌已过期|" + _status(401),
    ),
    # google-api-core's GoogleAPICallError for a 401/403, its class before the status (googleapis/python-api-core v2.19.0
    # google/api_core/exceptions.py: __str__ "{code} {message}"): the Google API refused the credentials
    _r("client_auth", r"\bapi_core\.exceptions\.(?:PermissionDenied|Unauthenticated|Unauthorized|Forbidden): 40[13]\b"),
    # a base URL the HTTP client cannot parse, in the words of the runtimes' URL parsers: CPython urllib.request
    # (`unknown url type: 'localhost:8000/v1'`), java.net.URI.toURL ("URI is not absolute"), .NET System.Uri and HttpClient
    # ("Invalid URI: The format of the URI could not be determined.", "An invalid request URI was provided. Either the
    # request URI must be an absolute URI or BaseAddress must be set."), Go net/url (`parse "...": invalid character " " in
    # host name`, `first path segment in URL cannot contain colon`, `missing protocol scheme`)
    _r("client_url_malformed", r"\bunknown url type: ['\"]?(?P<url>[^'\"\s]+)|\bURI is not absolute\b|\bInvalid URI: The format of the URI could not be determined\b|"
       r"\bAn invalid request URI was provided\b|\bparse \"(?P<url2>[^\"]*)\": (?:invalid character .{1,8} in host name|first path segment in URL cannot contain colon|"
       r"missing protocol scheme|invalid port\b)|"
       # a scheme looked up as the host name: the base URL's scheme is written twice or its "://" mistyped
       # ("http://http://host", "http//host", "https:host"), as node (lib/internal/errors.js `getaddrinfo ENOTFOUND http`)
       # and Go (net `lookup https: no such host`) report the lookup
       r"\bgetaddrinfo (?:ENOTFOUND|EAI_AGAIN) https?(?![\w.-])|\blookup https?(?: on [\w.:\[\]-]+)?: no such host\b"),
    # a client that has no key to send, in its own words: the variable it reads unset ("OPENAI_API_KEY environment variable
    # is not set"), "API key is missing" (the SDKs' own sentences are catalogue templates, which name their variable)
    _r("client_key_missing", r"\b[A-Z][A-Z0-9_]*_API_KEY\b(?: environment variable)? (?:is |was )?(?:not set|missing|unset|empty|not found|required)\b|"
       r"\bAPI key (?:is |was )?(?:missing|not set|not provided|not configured|empty)\b|"
       # one-api's (and its forks') refusal of a request with no token (model/token.go ValidateUserToken: 未提供令牌, "no token given")
       r"未提供令牌|"
       # the DeepSeek API's 401 to an Authorization header that is not `Bearer <key>`: what a client sends with its key unset
       # (`Bearer undefined`, `Bearer `, no header), as the projects that hit it quote it: "Authentication Fails (auth header
       # format should be Bearer sk-...)"; a key it looked up and refused is "Your api key: ****abcd is invalid"
       r"\bauth header format should be Bearer\b"),
    # the request named no model: OpenAI's "you must provide a model parameter", pydantic/FastAPI's missing `model` field
    # ({'type': 'missing', 'loc': ('body', 'model'), ...}); not any line with both words (llama.cpp's vocabulary warning
    # "Mask token is missing in vocab, please reconvert model!" on a healthy load)
    _r("client_model_missing_id", r"you must provide a model parameter|\"model\"\s*:\s*\{\}|model.*field required|"
       r"['\"]missing['\"],\s*['\"]loc['\"]:\s*[\[(]['\"]body['\"],\s*['\"]model['\"]|missing (?:required )?(?:parameter|field|argument):? ['\"`]?model\b|"
       r"missing (?:the )?model (?:in|from) (?:the )?request|"
       # the model named before its noun: Volcengine Ark's MissingParameter "The request failed because it is missing `model`
       # parameter", "missing 'model' field"
       r"\bmissing [`'\"]?model[`'\"]? (?:parameter|field)\b|"
       # a pydantic model of the request refusing an empty model (pydantic-core's string_too_short: "String should have at least
       # 1 character", after the field's name as FastAPI servers and LiteLLM print it)
       r"\bmodel\W{1,4}String should have at least 1 character|"
       # Groq's 400 for a body without one (its schema check: "'model' : property 'model' is missing")
       r"['\"]model['\"]\s*:\s*property ['\"]model['\"] is missing\b|"
       # the gin servers' 400 for an empty model field (Ollama's server/routes.go `gin.H{"error": "model is required"}`, the Go
       # gateways that copy it), as an error body or after its status
       r"[\"'](?:error|message|detail)[\"']\s*:\s*[\"'](?:the )?model is required\b|\b400\W{1,3}(?:the )?model is required\b"),
    _r(
        "client_model_not_found",
        # vLLM serving_engine.py `The model `{request.model}` does not exist.` (and the OpenAI API's "... or you do not have access
        # to it"), with its backticks eaten by markdown or turned into quotes when pasted
        r"The model [`'\"\u2018\u201c]?(?P<model>[^`'\"\u2019\u201d\s]+)[`'\"\u2019\u201d]? does not exist|model ['\"]?(?P<model2>[\w./:-]+)['\"]? not found|"
        # \b: openai.NotFoundError, never Python's ModuleNotFoundError / FileNotFoundError
        r"\bNotFoundError|Invalid model name passed(?: in model=(?P<model11>[^\s,'\"]*))?|model_not_found|does not exist or you do not have access|"
        # OpenRouter's 400 for an ID it does not list ("google/gemini-2.0-pro-exp-02-05:free is not a valid model ID"), and
        # Claude Code's words for the model its gateway does not have
        r"(?P<model3>[\w./:@-]+) is not a valid model ID|There's an issue with the selected model \((?P<model4>[^)\s]+)\)|"
        # OpenRouter's 404 for a model no provider serves, an API's "Unknown model: x", Google's
        # "404 models/gemini-pro is not found for API version v1beta"
        r"\bNo endpoints found (?:for|matching) (?P<model5>[\w./:@-]+?)\.?(?=[\s\"',]|$)|\bUnknown model:? [`'\"]?(?P<model6>[\w./:@-]+)|"
        r"\bmodels/(?P<model7>[\w.-]+) is not found\b|"
        # Together's 400 model_not_available "Unable to access model x. Please visit https://api.together.ai/models ...", the
        # Hugging Face router's model_not_supported "The requested model 'x' is not supported by any provider you have enabled.",
        # SiliconFlow's 20012 "Model does not exist. Please check it carefully." (an empty name in the first two: no model was sent)
        r"\bUnable to access model (?P<model12>[\w./:@-]*) ?\. Please visit|"
        r"The requested model [`'\"]?(?P<model13>[\w./:@-]*)[`'\"]? is not supported by any provider\b|"
        r"\bModel does not exist\. Please check it carefully\b|"
        # AWS Bedrock's ValidationException for a model ID (or inference profile) it does not know
        r"\bThe provided model identifier is invalid\b|"
        # a model the provider retired: Groq's 400 model_decommissioned "The model `mixtral-8x7b-32768` has been decommissioned
        # and is no longer supported", the OpenAI API's "The model `text-davinci-003` has been deprecated"
        r"The model [`'\"\u2018\u201c]?(?P<model10>[^`'\"\u2019\u201d\s]+)[`'\"\u2019\u201d]? has been (?:decommissioned|deprecated)\b|"
        # Google's NOT_FOUND for a model its API does not serve (Gemini / Cloud Code: `{"code": 404, "message": "Requested entity
        # was not found.", "status": "NOT_FOUND"}`, opencode-gemini-auth#65, gzzhongqi/geminicli2api#23), and a bare "Model not found"
        # after its status or as an error body's message (OpenHands#16365: "the endpoint returns a `400 Model not found` error")
        r"\bRequested entity was not found\b|\b4\d\d\W{1,3}model not found\b|[\"'](?:message|detail|error)[\"']\s*:\s*[\"']model not found\b|"
        # an error body that names the model it does not serve (the codes.md rule: a 404 naming the model is the model's)
        r"[\"'](?:message|detail|error)[\"']\s*:\s*[\"'](?:the requested )?model(?: [`'\\\"]*(?P<model8>[\w./:@-]+)[`'\\\"]*)? is not (?:available|served)\b|"
        # one-api's 503 when no channel of the key's group serves the model (songquanpeng/one-api v0.5.0-v0.6.9
        # middleware/distributor.go `当前分组 %s 下对于模型 %s 无可用渠道`; too few fixed characters for a template)
        r"当前分组 ?\S+ ?下对于模型 ?(?P<model9>[^\s\"'，,]+) ?无可用渠道",
    ),
    # an OpenAI Chat request (a `tool` role, a `system` message) sent to the Anthropic Messages API, which allows only the
    # user and assistant roles (its 400 invalid_request_error: `messages: Unexpected role "tool". Allowed roles are "user"
    # or "assistant".`): the client and the endpoint speak different APIs
    _r("client_protocol", r"messages: Unexpected role [\"'`]?(?:tool|system|function|developer)\b|Allowed roles are [\"'`]?user[\"'`]? or [\"'`]?assistant\b|"
       # a Responses API body (`input`) sent to /chat/completions, or a Chat Completions body (`messages`) to /responses: the
       # OpenAI API's 400 (`Missing required parameter: 'messages'.`, as the gateways relay it), and the pydantic/FastAPI
       # servers' (vLLM, SGLang: `{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}`)
       r"\bMissing required parameter:\s*[\"'`\u2018\u2019]?(?P<absent>messages|input)\b|"
       r"[\"']missing[\"'],\s*[\"']loc[\"']:\s*[\[(][\"']body[\"'],\s*[\"'](?P<absent2>messages|input|prompt)[\"']|"
       # TGI's router (axum's Json extractor, serde): "Failed to deserialize the JSON body into the target type: missing field
       # `messages`": a /v1/completions body at /v1/chat/completions, or the reverse (`prompt`)
       r"Failed to deserialize the JSON body into the target type: missing field [`'\"]?(?P<absent3>messages|prompt)\b"),
    _r("client_not_found", _status(404)),  # a bare 404: the path or the model, the rest of the log tells
    # and a gateway that gave up on the upstream, by its status in a client's words (504 Gateway Timeout, Cloudflare's 524
    # "A timeout occurred": "Error code: 524", "status code 524", aiohttp's `<ClientResponse(url) [524 None]>`); a stream
    # that sent no chunk within the client's idle deadline
    _r("client_timeout", r"Request timed out|ReadTimeout|APITimeoutError|timed out after \d+|\bstream idle timeout\b|\bno chunks? received for \d"),
    _r("client_timeout", _status(504)),
    _r("client_timeout", _status(524) + r"|<ClientResponse\([^)]*\) \[524\b"),
    _r(
        "client_bad_response",
        r"JSONDecodeError|Expecting value: line 1 column 1|object has no attribute 'choices'|KeyError: 'choices'|"
        r"<!DOCTYPE HTML|<html>|Response \[502\]|\b50[234]\b (?:Bad Gateway|Service Unavailable|Gateway Time-?out)|"
        # async-openai (Rust): OpenAIError::JSONDeserialize, and its tracing line with the body it could not parse
        r"\bJSONDeserialize\(|async_openai::error: failed deserialization of|"
        # the answer without its choices, as JavaScript and the openai-python models (pydantic) find it
        r"Cannot read propert(?:y|ies) of (?:undefined|null) \(reading '(?:choices|message|delta)'\)|validation errors? for ChatCompletion\w*",
    ),
    # a client's own words for a stream event it could not parse ("Failed to parse SSE data", "Stream decode error",
    # "Error parsing stream chunk"): the stream's events were malformed or cut, whatever the library under it
    _r("client_stream_invalid", r"\b(?:fail\w*|error|unable|could ?n[o']t|cannot) (?:to |while |when )?(?:decod\w*|pars\w*|deserializ\w*) (?:the )?"
       r"(?:SSE|stream(?:ing|ed)?|event[- ]?stream) (?:data|events?|chunks?|messages?|responses?|lines?)\b|"
       r"\b(?:SSE|stream(?:ing)?) (?:decod|pars|deserializ)\w* (?:error|failed|failure)\b"),
    # a stream held back on its way (a buffering proxy or gateway), told in prose: no client raises an error for it.
    # What nginx's proxy_buffering, a compressing CDN or a Go proxy without FlushInterval do to an event stream:
    # nothing, then the answer all at once, or bursts of many chunks (one rule per group of wordings: each needs
    # its own literals); a sentence that advises or fixes states no failure
    *(_r("client_stream_buffered", _STREAM_SAID + r"(?P<said>" + said + ")") for said in (
        r"all at once|\b(?:in|as|into) (?:one|a single) (?:\w+ )?(?:burst|chunk|block|blob|piece|go|read|lump)\b|"
        r"\bin (?:\w+ )?(?:bursts|clumps|lumps)\b|\bbursts of \d+|"
        r"\b(?:arriv\w*|com(?:es|ing)|came|appear\w*|show(?:s|ed|ing)?(?: up)?|return\w*|dump\w*|display\w*) at once\b|"
        # "the chunks all arrived to the browser at the same time" (and its frequent typo "at the some time")
        r"\b(?:stream\w*|chunks?|tokens?|SSE|events?)\b[^.]{0,80}?\b(?:arriv\w*|com(?:es|ing)|came|appear\w*|show(?:s|ed|ing)?(?: up)?|"
        r"return\w*|display\w*)\b[^.]{0,40}?\bat the s[ao]me time\b",
        r"\bin chunks rather than|\brather than (?:\w+ ){0,3}?stream\b|\binstead of (?:being )?stream(?:ed|ing)|"
        r"\binstead of (?:token[- ]by[- ]token|incrementally|word[- ]by[- ]word)|\bonly (?:the )?(?:final|last) (?:chunk|event|delta)s?\b",
        r"(?<![-_])\bbuffer(?:s|ed|ing) (?:\w+ ){0,2}?(?:SSE|stream|events?|requests?|responses?|output|tokens?|chunks?|answer|body)\b|"
        r"\b(?:is|are|was|were|get|gets|got|being) (?:\w+ )?buffered\b|\bbuffer (?:the|all) (?:\w+ )?(?:SSE|stream|events?|requests?|responses?|output|tokens?)\b|"
        r"\b(?:sit|sits|sat|held|stuck|stay|stays|kept) in (?:the|a|its) (?:\w+ )?buffer\b",
        r"\bstutter(?:s|ing|ed)?\b|\b(?:not|less) smooth\b|\bchoppy\b|\bnot (?:\w+ )?streamed\b|"
        r"\bnever (?:reach(?:es)?|arrives?|gets?)(?: at| to)? the (?:client|browser|UI|frontend)\b",
    )),
    # the same told in Chinese: a streamed (流式) or word-by-word (逐字) answer that comes back all at once (一次性返回)
    _r("client_stream_buffered", r"(?P<said>(?:流式|逐字|逐个\s?token|打字机)[^\n。]{0,80}?(?:一次性|一下子|全部一起)(?:完整)?(?:地)?(?:返回|输出|显示|出现|吐出))"),
    # --- perf signals -----------------------------------------------------------------------
    _r("decode_retract", r"Decode out of memory happened|#retracted_reqs: (?P<retracted>\d+)", False),
    _r("preemption", r"preempted by PreemptionMode\.\w+|Sequence group \S+ is preempted|total_num_cumulative_preemption=(?P<count>\d+)", False),
    _r("sampling_time", r"sampling time =\s*[\d.]+ ms /\s*\d+ runs\s*\(\s*(?P<ms_per_token>[\d.]+) ms per token", False),
    _r("eval_time", r"^(?:llama_perf_context_print|llama_print_timings):\s+eval time =\s*[\d.]+ ms /\s*\d+ (?:runs|tokens)\s*\(\s*(?P<ms_per_token>[\d.]+) ms per token", False),
    # llama.cpp's thread count against the host's hardware threads, as each version prints it: common's
    # get_system_info "system_info: n_threads = 24 / 32 | AVX = 1 ..." (2023), with " (n_threads_batch = 24)" before
    # the slash since late 2023; llama-server's "system info: n_threads = 24, n_threads_batch = 24, total_threads = 32"
    # (2024-10) and its key=value log before it ("system info | n_threads=24 n_threads_batch=-1 total_threads=32")
    _r("threads", r"n_threads ?= ?(?P<threads>\d+)(?: \(n_threads_batch = -?\d+\))?"
                  r"(?: / |, n_threads_batch = -?\d+, total_threads = | n_threads_batch=-?\d+ total_threads=)(?P<hw_threads>\d+)", False),
    _r("offload_layers", r"offloaded (?P<offloaded>\d+)/(?P<layers>\d+) layers to GPU", False),
    # quoted, it is vLLM's start-up advice ("set 'enforce_eager=True' or use '--enforce-eager'"), not the setting
    # SGLang's spelling: --disable-cuda-graph (not --disable-cuda-graph-padding), disable_cuda_graph=True in its ServerArgs;
    # "disable cuda graph by --disable-cuda-graph" is the advice list under "Capture cuda graph failed: ..." (every
    # model_executor/cuda_graph_runner.py since v0.1), not the setting: graphs were on, their capture failed
    _r("enforce_eager", r"(?<!')(?:enforce_eager=True|--enforce-eager)|CUDA graph is turned off|cuda graph is disabled|"
                        r"(?<!graph by )--disable-cuda-graph(?![-\w])|disable_cuda_graph=True", False),
    _r("custom_allreduce_off", r"Custom allreduce is disabled", False),
    # SGLang sizing its batch cap to the KV pool (mem_cache/kv_cache_configurator.py, model_runner.py before it):
    # "max_running_requests was reduced from the requested 128 to 50 (per dp worker) due to the available KV
    # cache capacity." / "max_running_requests is capped to 50 by the mamba state cache (...)"
    _r("batch_cap_reduced", r"max_running_requests (?:was reduced from (?:the )?requested (?P<requested>\d+) to (?P<reduced>\d+)"
       r"|is capped to (?P<capped>\d+) by the (?P<by>mamba state cache))", False),
    # NCCL without peer-to-peer between the GPUs of one node: told so (misc/param.cc prints "NCCL_P2P_DISABLE set by
    # environment to 1."; a launch line or launcher sets NCCL_P2P_DISABLE=1), or its channels fall back to shared host
    # memory (transport.cc: "Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct")
    _r("nccl_p2p_off", r"\bNCCL_P2P_DISABLE(?:\s+set by environment to\s+|=)['\"]?(?:1|true)\b"
       r"|NCCL INFO Channel \d+(?:/\d+)? : \d+\[\w+\] -> \d+\[\w+\].{0,40}? via SHM/", False),
    # `ollama ps` PROCESSOR column (cmd/cmd.go): "100% CPU", "36%/64% CPU/GPU" (a model not wholly on the GPU)
    _r("ollama_cpu_share", r"\b(?:(?P<cpu>\d{1,2})%/(?P<gpu>\d{1,2})% CPU/GPU|(?P<all_cpu>100)% ?CPU)\b", False),
    # NCCL's network transport: sockets (TCP) where InfiniBand/RoCE/EFA was expected across nodes
    _r("nccl_net_socket", r"(?:(?P<host>[\w.<>-]+):\d+:\d+ \[\d+\] )?NCCL INFO NET/Socket : Using (?P<ifaces>\S.*)", False),
    # the status of an answer, in two more access-log and client shapes, last so that any rule naming a cause
    # on the same line wins: Ollama's request log (gin-gonic's LoggerWithFormatter default,
    # `[GIN] 2026/01/28 - 23:40:13 | 404 |  3.2µs | 10.0.0.5 | POST  "/v1/messages?beta=true"`), and Claude Code's
    # API_ERROR_MESSAGE_PREFIX before the Anthropic SDK's APIError message `${status} ${message}`
    # (`API Error: 529 Overloaded. This is a server-side issue ...`, `API Error (529 {"type":"error",...})`)
    _r("http_response", r"\[GIN\][^|\n]*\|\s*(?P<status>[45]\d\d)\s*\|[^|\n]*\|[^|\n]*\|\s*"
       r"(?P<method>GET|POST|PUT|DELETE|PATCH|HEAD)\s+\"?(?P<path>/[^\"\s]*)", False),
    _r("http_response", r"\bAPI Error:? \(?(?P<status>[45]\d\d)\b", False),
    # a key in a shape no server accepts, as the log shows it sent or set: an Authorization header whose token is
    # quoted or carries the scheme twice (`Bearer \"abc123\"`, `Bearer Bearer sk-...`), or Windows cmd's
    # `set OPENAI_API_KEY="sk-..."`, which keeps the quotes in the value (cmd's set takes all after `=`); and an HTTP
    # client refusing to send the auth header because the key has a character no header carries (a newline,
    # leading whitespace): h11/httpx `Illegal header value b'Bearer sk-...\n'`, CPython http.client `Invalid header
    # value`, requests `Invalid leading whitespace, reserved character(s), or return character(s) in header value`,
    # node's ERR_INVALID_CHAR `Invalid character in header content ["Authorization"]`, Go's transport
    # `net/http: invalid header field value for "Authorization"` (before go1.20: `... value %q for key Authorization`)
    _r("client_key_malformed", r"\bBearer\s+(?:Bearer\s|\\?[\"'\u2018\u2019\u201c\u201d](?=[\w-]))|"
       r"(?:^|>)\s*set\s+(?P<var>[A-Z][A-Z0-9_]*(?:API_KEY|TOKEN|_KEY))=[\"']|"
       r"(?:Illegal|Invalid) header value b?['\"](?:Bearer\b|\s*sk-)|"
       r"return character\(s\) in header value: b?['\"](?:Bearer\b|\s|sk-)|"
       r"Invalid character in header content \[\"(?:Authorization|x-api-key|api-key)\"\]|"
       r"invalid header field value (?:for \"(?:Authorization|X-Api-Key|Api-Key)\"|.* for key (?:Authorization|X-Api-Key|Api-Key)\b)",
       False),
)



# kinds only catalogue templates produce (no hand rule has them): Ray's own cluster failures, which
# checks/cluster/ray_log.py turns into cluster.* findings; a client that refuses to send a request
# without a key, a chunked (streamed) answer cut before its last chunk, and a client tool's catch-all
# that says only that a request failed (checks/access/client_log.py); a 5xx a client names in words, not
# digits (LiteLLM's InternalServerError, the Vercel AI SDK's statusText "Bad Gateway", a gateway's error page);
# an HTTP client refusing a URL it cannot parse (no scheme: "localhost:8000/v1"); a model the engine cannot
# split into pipeline stages (checks/load/parallel.py)
CATALOGUE_KINDS = ("ray_placement_infeasible", "ray_cluster_unreachable", "ray_node_dead", "client_key_missing",
                   "client_stream_cut", "client_failed", "client_server_error", "client_url_malformed", "pp_unsupported",
                   # a stream answered with something that is no event stream (no body, events that are not JSON, another
                   # Content-Type): checks/access/client_log.py
                   "client_stream_invalid",
                   # vLLM cutting the CUDA graph capture ceiling to the largest size it captures: checks/perf/engine_log.py
                   "graph_capture_truncated",
                   # vLLM V1 capturing full graphs for decode batches (sizes up to max_num_seqs): checks/perf/engine_log.py
                   "graph_capture_decode")
KINDS = frozenset({r.kind for r in HAND_RULES} | set(CATALOGUE_KINDS))  # what a catalogue entry may name


def _catalogue_rules() -> tuple[Rule, ...]:
    """The catalogue's templates, longest literal text first (the most specific wording wins)."""
    entries = catalogue.load(KINDS)
    rules = []
    for e in sorted(entries, key=lambda e: -e.literal):
        # its most telling word: the longest that steady-state noise does not hold
        word = max(e.words, key=lambda w: (not prefilter.in_noise(w), len(w)))
        rules.append(Rule(e.kind, catalogue.LazyPattern(e.regex), e.fatal, (word,), e.echo, e.source, e.engine))  # type: ignore[arg-type]
    return tuple(rules)


CATALOGUE_RULES = _catalogue_rules()
RULES: tuple[Rule, ...] = HAND_RULES + CATALOGUE_RULES

# start-up milestones and traceback frames -> the phase an OOM belongs to
PHASES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "cuda_graph",
        re.compile(
            r"capture_model|Capturing (?:the model for )?(?:CUDA ?graphs?|cudagraphs|batches)|cuda_graph_runner|"
            r"CudaGraphRunner|capture_one_batch_size|_capture_cudagraphs|graph capture|"
            # the KV cache sized (vLLM V0 llm_engine, V1 gpu_worker / kv_cache_utils): graph capture comes next
            r"# GPU blocks: [1-9]|Available KV cache memory: \d|GPU KV cache size: [1-9]|"
            # SGLang: the KV pool allocated (mem_cache/memory_pool.py, model_runner.init_memory_pool), then its graph capture
            r"KV Cache is allocated\. #tokens: [1-9]|Memory pool end\. avail mem|Capture cuda graph begin|"
            # vLLM V1 kv_cache_utils after sizing the cache: "Maximum concurrency for %s tokens per request: %.2fx"
            r"Maximum concurrency for [\d,]+ tokens per request",
            re.I,
        ),
    ),
    (
        "profiling",
        re.compile(
            r"profile_run|determine_num_available_blocks|determine_available_memory|Memory profiling|_dummy_run|"
            r"_dummy_sampler_run|warming up sampler|init_memory_pool|"
            # the weights loaded (vLLM V0 model_runner, V1 gpu_model_runner, SGLang model_runner): the profiling run is next
            r"Loading model weights took|Loading weights took \d|Model loading took|Load weight end|profile_max_num_token|initialize_kv_cache|_initialize_kv_caches|"
            r"llama_kv_cache_init|initialize_cache|compute buffer|llama_new_context|llama_context:|"
            # llama.cpp places the KV cache after the weights, whatever its backend prefix (CUDA0, Vulkan1, Metal)
            r"\bKV (?:buffer|self) size\b|"
            # llama.cpp's load_tensors prints "%s: %12s model buffer size = %8.2f MiB" once every weight buffer is
            # allocated (src/llama-model.cpp, b3000-b7000; llm_load_tensors before): a GPU allocation that fails after
            # it is the KV cache's or the compute buffers' (ggml-cuda.cu "cudaMalloc failed" is the same line for all)
            r"\bmodel buffer size =|"
            # TensorRT-LLM: the engine (its weights) is deserialized before the execution context and KV cache
            r"IExecutionContext creation|for max tokens in paged KV cache|"
            # TensorRT-LLM sizing its paged KV cache from the memory the engine left (trtGptModelInflightBatching.cpp), and its
            # PyTorch backend's estimate after the weights (_torch/pyexecutor/_util.py KvCacheCreator.estimate_max_tokens)
            r"Memory usage when calculating max tokens in paged kv cache|Memory used after loading model weights|"
            # TGI's warm-up batch (server.py Warmup, flash_causal_lm.py warmup) and the launcher's report of it
            r"\bwarmup\b|Method Warmup|Warming up model|"
            # TGI's shard has loaded its model (server.py serve_inner logs "Server started at unix://..." once get_model
            # returned; the launcher then "Shard ready in"): the router's warm-up is next; TensorRT deserialized the
            # engine (its weights): "Loaded engine size: %d MiB", the execution context and KV cache are next
            r"Server started at unix://|Shard ready in|Loaded engine size: \d|"
            # mistral.rs once its loader returned the model (mistralrs-server main.rs v0.1-v0.4, mistralrs-server-core
            # mistralrs_for_server_builder.rs, mistralrs-bench: info!("Model loaded.")): past the weights
            r"\bModel loaded\.$",
            re.I,
        ),
    ),
    (
        "weights",
        re.compile(
            r"load_model|load_weights|create_weights|weight_loader|Loading model weights|Starting to load model|"
            r"Loading safetensors checkpoint|Loading pt checkpoint|llm_load_tensors|load_tensors|llama_model_load|"
            r"Load weight begin|_initialize_model|initialize_model|from_pretrained|model_loader|init_model|"
            # LMDeploy's executors build the model and load its weights (pytorch/engine/executor/*, model_agent)
            r"\bbuild_model\b|load_model_weights|"
            # mistral.rs's pipelines ("Loading model `%s` on %s.", pipeline/normal.rs, gguf.rs, ggml.rs, vision.rs v0.2+;
            # mistralrs-server main.rs v0.1 "Loading model `%s` on %?...", a --log file's "Loading model on Cuda(...)...")
            # and FreeToken's progress bars (models/*/weight.py desc="Loading weights", checkpoint/ftw.py "Loading weights
            # (FTW)"; the vLLM/SGLang "Loading weights took" is profiling's, matched first)
            r"\bLoading model (?:`[^`]*` )?on [A-Z]\w*|\bLoading weights\b",
            re.I,
        ),
    ),
    (
        "serving",
        re.compile(
            # the engine finished starting (vLLM V1 core.py "init engine (profile, create kv cache, warmup model) took",
            # api_server "Starting vLLM API server ... on", TGI router "Connected" once the shards warmed up)
            r"create kv cache, warmup model\) took|"
            # graph capture done (vLLM V0 model_runner / V1 gpu_model_runner "Graph capturing finished in %.0f secs",
            # SGLang model_runner "Capture cuda graph end."), llama-server up ("server is listening on %s - starting
            # the main loop"): what runs out next is a served step
            r"Graph capturing finished in \d|Capture cuda graph end|server is listening on \S+ - starting the main loop|"
            # SGLang's scheduler once its model runner is built (weights, KV pool, graphs): "max_total_num_tokens=%d,
            # chunked_prefill_size=%d, ..."; TurboMind's KV blocks allocated (BlockManager.cc "[BlockManager]
            # max_block_count = %d") and its batch loop started (LlamaBatch<T>::Start())
            r"max_total_num_tokens=\d+, chunked_prefill_size=|\[BlockManager\] max_block_count = [1-9]|LlamaBatch<T>::Start\(\)|Starting vLLM (?:API )?server (?:\d+ )?on|router/src/server\.rs:\d+: Connected|"
            r"Uvicorn running|Application startup complete|Exception in ModelTpServer|TpModelWorkerClient hit an exception|The server is fired up|Prefill batch|Decode batch|"
            r"Avg prompt throughput|POST /v1/|\"POST /\w+ HTTP/1\.[01]\" 200|router/src/server\.rs:\d+: Success|\[GIN\][^|]*\| 200 \|[^|]*\|[^|]*\| POST|forward_batch_generation|run_batch|sampler|\bsample\b|"
            r"step_async|execute_model_req|slot \w+: id|update_slots|Generation throughput|"
            # vLLM V1's engine-core loop and SGLang's scheduler loop run only once the server is up (a
            # profiling run's execute_model sits under profile_run, which ranks first)
            r"run_busy_loop|\bexecute_model\b|event_loop_normal|event_loop_overlap|"
            # the scheduler preempts or retracts only running requests
            r"preempted by PreemptionMode|total_num_cumulative_preemption|Decode out of memory happened|"
            # LMDeploy's engine loop (pytorch/engine/request.py, engine.py), TGI once warmed up (v2/v3 lib.rs, router
            # server.rs) and its shard's Prefill/Decode calls, TensorRT-LLM's PyTorch-backend executor loop, Ollama's
            # runner once started and its access log
            r"Engine loop failed|\b_?async_loop|async_stream_infer|\b_async_step|"
            r"Setting max batch total tokens|server\.rs:\d+: Connected|\bin (?:Prefill|Decode)\b|\bgenerate_token\b|"
            r"_executor_loop|llama runner started|\[GIN\]|"
            # mistral.rs up (mistralrs-server main.rs v0.1-v0.4 "Serving on http://%s:%d.", mistralrs-cli serve.rs "Server
            # listening on http://%s:%d") and its engine loop's stages failing (mistralrs-core utils/mod.rs
            # handle_pipeline_forward_error!: error!("{} - Model failed with error: {:?}", $stage, ...), the stages
            # "step", "prompt step", "completion step" of engine/mod.rs); FreeToken up (server/api_server.py "API server is
            # ready to serve on %s:%d") and a worker that died after it (server/supervisor.py "backend worker %s exited";
            # before ready it says "exited during load")
            r"\bServing on https?://|\bServer listening on https?://|\bstep - Model failed with error\b|"
            r"API server is ready to serve on|backend worker \S+ exited(?! during load)|"
            # a report that says what the server was doing ("it crashes during inference", "after sending 50
            # concurrent requests", "under heavy load"): requests were being served when it ran out
            r"\bduring (?:inference|generation|decoding|serving|benchmark)|\bunder (?:heavy |high )?load\b|"
            r"\b(?:concurrent|parallel|simultaneous) requests\b|\bafter (?:running|serving) for\b|"
            r"\b(?:sending|processing|handling) (?:a |the |some |many |multiple |\d+ )?(?:long |large )?(?:requests?|prompts?)\b|"
            # the same report in Chinese (LMDeploy's, SGLang's and Qwen's trackers): "concurrency" (并发); not "推理时",
            # which reporters write for any run of the tool, start-up included
            r"并发",
            re.I,
        ),
    ),
    (
        # a report that says the weights were loading when it ran out ("CUDA OOM while loading the model", "during
        # weight loading", "at load time"; in Chinese 加载模型时 "when loading the model"), as the serving entry reads
        # "during inference": last, so that a line which says both (it loads, then fails under load) is serving's
        "weights",
        re.compile(
            r"\b(?:while|when|during|on|at)\s+(?:the\s+)?(?:load(?:ing)?\s+(?:of\s+)?(?:the\s+|its\s+)?(?:model|weights?|checkpoint|shards?)\b|"
            r"(?:model|weights?|checkpoint)[ -]load(?:ing)?\b|load[ -]time\b)|"
            r"(?:加载|載入|加載)(?:模型|权重|權重)(?:时|時|的时候|过程中)|模型(?:加载|加載)(?:时|時|过程中|阶段)",
            re.I,
        ),
    ),
)
# a line holding a command-line flag is a command or a config entry (a launch line, a Helm values list with its
# comments: `# "--max_num_seqs=1",  # Number of concurrent requests`), never the engine serving or a report of it
COMMAND_FLAG = re.compile(r"(?:^|[\s\"'\[(,=])--[a-z][\w-]+", re.I)
PHASE_RANK = {"cuda_graph": 0, "profiling": 1, "weights": 2, "serving": 3}
# the order a start-up goes through them: a later milestone means the engine went on
PROGRESS = {"startup": 0, "weights": 1, "profiling": 2, "cuda_graph": 3, "serving": 4}


class PhaseTracker:
    """Where the engine is: the last milestone seen, refined by the frames of the traceback that
    is being printed (the frames name the function that was allocating)."""

    def __init__(self) -> None:
        self.milestone = "startup"
        self.frames: deque[str] = deque(maxlen=80)

    def feed(self, text: str) -> None:
        if text.startswith("Traceback (most recent call last)"):
            self.frames.clear()
            return
        if text.startswith("File ") or text.startswith("frame #") or " in " in text[:200] and ".py" in text[:200] or frames.parse(text):
            self.frames.append(text[:300])
            return
        for phase, pattern in PHASES:
            if pattern.search(text):
                if phase != "serving" or not COMMAND_FLAG.search(text):
                    self.milestone = phase
                return

    def phase(self) -> str:
        return self.frame_phase() or self.milestone

    def frame_phase(self) -> str:
        """The phase the kept frames name (the earliest start-up step among them), or "". (Asked at
        each line of a traceback, over up to 80 frames: each frame's own answer is remembered.)"""
        named = [phase for phase in map(_frame_phase, self.frames) if phase]
        return min(named, key=PHASE_RANK.__getitem__) if named else ""

    def reset(self) -> None:
        self.milestone = "startup"
        self.frames.clear()


@functools.lru_cache(maxsize=4096)
def _frame_phase(frame: str) -> str:
    """The earliest start-up step one frame names: the function it names, by the engines' call paths
    (doctor/data/oom_frames.jsonl), else its words; "" for none."""
    named = frames.phase(frame)
    best = ""
    for phase, pattern in PHASES:
        if (phase == named if named else pattern.search(frame)) and (not best or PHASE_RANK[phase] < PHASE_RANK[best]):
            best = phase
    return best


def to_number(raw: str) -> int | float | str:
    """ "1,192,160" -> 1192160; "2.63 GiB" -> 2.63 (GiB); "462.00 MiB" -> 0.451 (GiB)."""
    s = raw.strip()
    m = re.fullmatch(r"(" + _NUM + r")\s*([KMGT])i?B", s)
    if m:
        value = float(m.group(1).replace(",", ""))
        scale = {"K": 1 / 1024**2, "M": 1 / 1024, "G": 1.0, "T": 1024.0}[m.group(2)]
        return round(value * scale, 4)
    if re.fullmatch(r"\d[\d,]*", s):
        return int(s.replace(",", ""))
    if re.fullmatch(r"\d+\.\d+", s):
        return float(s)
    return s


# every rule literal once, with the rules that need it: a line is tested against each literal once
# (not once per rule that lists it), and only the rules one of whose literals it holds are tried
def _rules_of() -> dict[str, frozenset[int]]:
    found: dict[str, set[int]] = {}
    for i, rule in enumerate(RULES):  # one pass (a literal by a rule's literals was ~3M tests, 0.1 s a start)
        for lit in rule.literals:
            found.setdefault(lit, set()).add(i)
    return {lit: frozenset(found[lit]) for lit in sorted(found)}


_RULES_OF = _rules_of()
_LITERALS = tuple(_RULES_OF)


def match(text: str) -> tuple[Rule, dict[str, object]] | None:
    """The rule matching this message, with its values (numbers converted).

    The first hand rule that matches and the first catalogue template that matches compete: of two
    kinds, the match that spells out more fixed text (its span less its placeholders) wins, a hand
    rule on a tie; of one kind, the one with more values; an echo (a wrapper that only repeats a failure)
    never beats a cause on the same line. So a template for a whole message beats
    a hand rule's keyword ("Cannot allocate memory" inside an NCCL registration failure), and the
    hand rules keep the lines they were tuned on."""
    text = without_advice(text)
    low = text.lower()
    tried: set[int] = set()
    for lit in _LITERALS:
        if lit in low:
            tried |= _RULES_OF[lit]
    hand: tuple[Rule, re.Match[str]] | None = None
    listed: tuple[Rule, re.Match[str]] | None = None
    for i in sorted(tried):
        rule = RULES[i]
        if (listed if rule.source else hand) is not None:
            continue
        m = rule.pattern.search(text)
        if m is None:
            continue
        if rule.source:
            listed = (rule, m)
            break  # the catalogue comes after every hand rule
        hand = (rule, m)
    if hand is None and listed is None:
        return None
    best = hand if listed is None else listed if hand is None else _better(hand, listed)
    rule, m = best
    values: dict[str, object] = {}
    for key, raw in m.groupdict().items():
        if raw is None:
            continue
        key = key.rstrip("0123456789") if key[-1].isdigit() and key.rstrip("0123456789") in _BASE_KEYS else key
        values.setdefault(key, to_number(raw))
    if rule.source:
        values["template_source"] = rule.source
    return rule, values


# advice an engine appends to its own error whatever happened: sglang/srt/entrypoints/engine.py _scheduler_died_error
# ("Rank 0 scheduler died during initialization (exit code: -3). If exit code is -9 (SIGKILL), a common cause is the OS
# OOM killer. Run `dmesg -T | grep -i oom` to check."): its SIGKILL and OOM killer are not what this exit was
ADVICE_MARK = "a common cause is the OS OOM killer"
ADVICE = re.compile(r"If exit code is -9 \(SIGKILL\), a common cause is the OS OOM killer\.?(?:\s*Run [`'\"]?dmesg[^`'\"]*[`'\"]? to check\.?)?")



def without_advice(text: str) -> str:
    """The message without the advice its engine appends to it whatever happened (ADVICE)."""
    return ADVICE.sub("", text) if ADVICE_MARK in text else text


def _fixed(rule: Rule, m: re.Match[str]) -> int:
    """Characters of the match that are not placeholders: how much wording it pinned down. A hand rule's
    placeholders are its named captures; a template's are all its groups, its unnamed `{}` ones too
    (catalogue.compile_template), which the captures alone would count as fixed text: a long template
    around an unnamed `{}` outvoted a specific hand rule by what the `{}` matched."""
    placeholders = m.groups() if rule.source else m.groupdict().values()
    return len(m.group()) - sum(len(v) for v in placeholders if v)


def _better(hand: tuple[Rule, re.Match[str]], listed: tuple[Rule, re.Match[str]]) -> tuple[Rule, re.Match[str]]:
    if hand[0].echo != listed[0].echo:  # a wrapper's words ("Download encountered an error: ...") lose to the cause it quotes
        return listed if hand[0].echo else hand
    count = [sum(v is not None for v in m.groupdict().values()) for _, m in (hand, listed)]
    if hand[0].kind == listed[0].kind:
        return listed if count[1] > count[0] else hand
    fixed = _fixed(*listed) - _fixed(*hand)
    # of equal wording, the match that reads more of the values the checks use (the status an HTTP error names)
    return listed if fixed > 0 or fixed == 0 and count[1] > count[0] else hand


# groups named xxx2/xxx3 are alternatives of xxx (one regex, several wordings)
_BASE_KEYS = {"flag", "model_type", "method", "status", "model", "xid", "path", "url", "absent"}
