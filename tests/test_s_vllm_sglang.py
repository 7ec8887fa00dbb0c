"""vLLM and SGLang failures read in causal order (s-vllm-sglang): the first error before the cascade its wrappers
print, and a death no exception explains read from what the engine logged about itself before it."""

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


# vllm/model_executor/model_loader/weight_utils.py (v0.11+): logger.info("Filesystem type for checkpoints: %s. Checkpoint
# size: %.2f GiB. Available RAM: %.2f GiB.", ...), then "Auto-prefetch is disabled because the filesystem (%s) is not a
# recognized network FS (NFS/Lustre) and the checkpoint size (%.2f GiB) exceeds 90%% of available RAM (%.2f GiB)."
# Lines from the syv-ai/qwen38-27b-rtx3090#39 log (16 GB host, RTX 3090), cut where the engine core died.
CHECKPOINT = ("(EngineCore pid=5555) INFO 08-24 16:26:46 [weight_utils.py:867] Filesystem type for checkpoints: EXT4. "
              "Checkpoint size: {ckpt} GiB. Available RAM: {ram} GiB.\n")
SHARDS = ("  Loading safetensors checkpoint shards: 0% Completed | 0/8 [00:00<?, ?it/s]\n"
          "  Loading safetensors checkpoint shards: 62% Completed | 5/8 [00:39<00:18, 6.04s/it]\n")
CORE_FAILED = "(EngineCore pid=5555) ERROR 08-24 16:27:35 [core.py:1349] EngineCore failed to start.\n"


def test_checkpoint_larger_than_ram_then_silent_death_is_host_oom(tmp_path: Path) -> None:
    found = findings_of(tmp_path, CHECKPOINT.format(ckpt="15.87", ram="10.07") + SHARDS + CORE_FAILED)
    assert found[0].code == "load.host_oom"
    assert found[0].evidence[0] == ("vLLM's loader logged a 15.87 GiB checkpoint and 10.07 GiB of available host RAM: "
                                    "more than the 90% of it the loader streams through the page cache")
    # a staging buffer of a quarter of the RAM left (the maintainer's 2 GiB for 10 GiB)
    assert found[0].fixes[0].command == "--load-format runai_streamer --model-loader-extra-config '{\"memory_limit\": 2147483648}'"


def test_checkpoint_that_fits_ram_is_not_host_oom(tmp_path: Path) -> None:
    found = findings_of(tmp_path, CHECKPOINT.format(ckpt="8.68", ram="843.15") + SHARDS + CORE_FAILED)
    assert "load.host_oom" not in [f.code for f in found]


def test_checkpoint_larger_than_ram_with_an_error_of_its_own_is_that_error(tmp_path: Path) -> None:
    # the loader's own exception names the cause: the RAM line is no reading of it
    text = (CHECKPOINT.format(ckpt="15.87", ram="10.07") + SHARDS +
            "(EngineCore pid=5555) ERROR 08-24 16:27:35 [core.py:1349] EngineCore failed to start.\n"
            "(EngineCore pid=5555) Traceback (most recent call last):\n"
            "(EngineCore pid=5555) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB. GPU 0 has a total "
            "capacity of 23.56 GiB of which 1.18 GiB is free.\n")
    found = findings_of(tmp_path, text)
    assert "load.host_oom" not in [f.code for f in found]


def test_architecture_refused_after_its_extension_failed_to_import_is_the_import(tmp_path: Path) -> None:
    # vllm/model_executor/models/registry.py (v0.6.3): logger.exception on the model module's import, then
    # ValueError(f"Model architectures {architectures} are not supported for now. ..."); the title of the report
    # (vllm-project/vllm issue, [Bug]: ...) names the refusal first
    text = ("[Bug]: Model architectures ['LlavaForConditionalGeneration'] are not supported for now.\n\n"
            "ERROR 10-16 05:20:48 registry.py:264] ImportError: /usr/local/lib/python3.10/dist-packages/"
            "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
            "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE\n"
            "ValueError: Model architectures ['LlavaForConditionalGeneration'] are not supported for now.\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "load.cuda_mismatch"
    assert found[0].fixes[0].command == "pip install --force-reinstall --no-cache-dir flash-attn"
    assert "load.engine_outdated" in [f.code for f in found[1:]]


def test_a_cause_logged_as_a_warning_ranks_after_the_error_the_engine_stopped_on(tmp_path: Path) -> None:
    # vllm/_custom_ops.py (v0.6.3): logger.warning("Failed to import from vllm._C with %r", e): the engine goes on;
    # vllm/worker/worker.py raise_if_cache_size_invalid (v0.6.3): the error it then stops on
    text = ("INFO 01-30 20:57:10 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: model='m', max_seq_len=32768\n"
            "WARNING 01-30 20:57:18 _custom_ops.py:14] Failed to import from vllm._C with ImportError('/usr/lib/python3.10/"
            "site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi')\n"
            "ERROR 01-30 20:58:00 engine.py:160] ValueError: The model's max seq len (32768) is larger than the maximum number "
            "of tokens that can be stored in KV cache (20000). Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine.\n")
    codes = [f.code for f in findings_of(tmp_path, text)]
    assert codes[0] == "load.kv_cache_insufficient"
    assert "load.cuda_mismatch" in codes[1:]


def test_triton_fp8e4nv_on_ampere_is_dtype_unsupported(tmp_path: Path) -> None:
    # triton python/triton/language/semantic.py cast(): assert builder.options.allow_fp8e4nv, "fp8e4nv data type is not
    # supported on CUDA arch < 89"; the line as SGLang's DeepSeek-R1 FP8 run on A100 logged it (SkyPilot example)
    text = ("[2025-02-15 12:25:06 TP5] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16\n"
            "(head, rank=0, pid=8292) [rank5]:W0215 12:25:06.525000 14707 site-packages/torch/_higher_order_ops/"
            "triton_kernel_wrap.py:504] [12/0_1] AssertionError: fp8e4nv data type is not supported on CUDA arch < 89\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "load.dtype_unsupported"
    assert found[0].title == "FP8 is not supported on this GPU"
    assert "fp8e4nv data type is not supported on CUDA arch < 89" in found[0].evidence[0]


def test_jit_build_without_ninja_is_the_toolchain_not_a_model_file(tmp_path: Path) -> None:
    # flashinfer/jit/cpp_ext.py run_ninja: subprocess.run(["ninja", ...]) -> FileNotFoundError naming the program
    text = ("[2026-02-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', attention_backend='flashinfer')\n"
            "Traceback (most recent call last):\n"
            '  File "/opt/venv/lib/python3.12/site-packages/flashinfer/jit/cpp_ext.py", line 280, in run_ninja\n'
            "FileNotFoundError: [Errno 2] No such file or directory: 'ninja'\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "load.cuda_mismatch"
    assert found[0].fixes[0].command == "pip install ninja"
    assert "load.model_files" not in [f.code for f in found]


def test_a_missing_model_path_stays_model_files(tmp_path: Path) -> None:
    text = ("Traceback (most recent call last):\n"
            "FileNotFoundError: [Errno 2] No such file or directory: '/models/cc/config.json'\n")
    assert findings_of(tmp_path, text)[0].code == "load.model_files"


def test_sglang_scheduler_dead_with_exit_code_minus_9_is_a_kill(tmp_path: Path) -> None:
    # sglang/srt/entrypoints/engine.py _launch_subprocesses (v0.4-v0.5): on EOFError from the scheduler's pipe,
    # logger.error(f"Rank {i} scheduler is dead. Please check if there are relevant logs."), then
    # logger.error(f"Exit code: {scheduler_procs[i].exitcode}"), then RuntimeError("Initialization failed. ...")
    text = ("[2025-05-01 10:00:00] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', tp_size=2)\n"
            "[2025-05-01 10:00:20 TP1] Load weight begin. avail mem=23.00 GB\n"
            "[2025-05-01 10:00:50] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
            "[2025-05-01 10:00:50] Exit code: -9\n"
            "RuntimeError: Initialization failed. Please see the error messages above.\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "load.host_oom"
    assert found[0].evidence[0].endswith("Exit code: -9")


def test_sglang_scheduler_dead_with_exit_code_1_is_not_a_kill(tmp_path: Path) -> None:
    text = ("[2025-05-01 10:00:50] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
            "[2025-05-01 10:00:50] Exit code: 1\n")
    assert "load.host_oom" not in [f.code for f in findings_of(tmp_path, text)]


def test_pre_2_1_torch_oom_allocated_counts_as_what_the_process_held(tmp_path: Path) -> None:
    # c10/cuda/CUDACachingAllocator.cpp before PyTorch 2.1: "Tried to allocate X (GPU n; Y total capacity; M already
    # allocated; F free; R reserved in total by PyTorch)": PyTorch's own M is a floor of what the process held, so
    # 20.10 GiB held by a process whose Llama-2-7B fp16 shard is 12.6 GiB says the weights were in, whatever frame failed
    text = ("INFO 03-01 10:00:00 llm_engine.py:70] Initializing an LLM engine with config: model='meta-llama/Llama-2-7b-hf', "
            "tokenizer='meta-llama/Llama-2-7b-hf', dtype=torch.float16, max_seq_len=4096, tensor_parallel_size=1\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/model_loader.py", line 92, in get_model\n'
            "    model.load_weights(model_config.model, model_config.download_dir,\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total capacity; "
            "20.10 GiB already allocated; 1.02 GiB free; 20.20 GiB reserved in total by PyTorch)\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "load.runtime_oom"
    assert ("the process held 20.1 GiB, more than its 12.6 GiB weight shard (meta-llama/Llama-2-7b-hf, TP 1) could take: "
            "the weights had loaded") in found[0].evidence


def test_nccl_watchdog_after_a_ranks_own_error_is_its_cascade(tmp_path: Path) -> None:
    # torch ProcessGroupNCCL.cpp: "Watchdog caught collective operation timeout: WorkNCCL(...)" on the rank waiting for the
    # one whose kernel faulted first; vllm/v1/engine/exceptions.py EngineDeadError after both
    text = ("INFO 06-01 10:00:00 [api_server.py:1043] vLLM API server version 0.10.0\n"
            "(VllmWorker TP1 pid=403) ERROR 06-01 11:00:00 [multiproc_executor.py:600] RuntimeError: CUDA error: an illegal "
            "memory access was encountered\n"
            "[rank0]:[E601 11:10:00.000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=5000, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.\n"
            "(APIServer pid=1) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
            "(above) for the root cause.\n")
    found = findings_of(tmp_path, text)
    assert [f.code for f in found] == ["load.unrecognized_failure"]
    assert "an illegal memory access" in found[0].title


def test_nccl_peer_gone_after_an_oom_adds_no_second_finding(tmp_path: Path) -> None:
    # rank 1 runs out of memory; rank 0's NCCL call fails with ncclRemoteError (src/init.cc ncclGetErrorString)
    text = ("(VllmWorker rank=1 pid=402) ERROR 05-10 10:00:30 [multiproc_executor.py:527] torch.OutOfMemoryError: CUDA out "
            "of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.19 GiB of which 1.02 GiB is free.\n"
            "(VllmWorker rank=0 pid=401) ERROR 05-10 10:00:31 [multiproc_executor.py:527] RuntimeError: NCCL error: remote "
            "process exited or there was a network error\n")
    codes = [f.code for f in findings_of(tmp_path, text)]
    assert codes[0] in ("load.runtime_oom", "load.weights_oom")
    assert "load.nccl_failed" not in codes and "load.unrecognized_failure" not in codes


def test_nccl_watchdog_alone_is_still_nccl_failed(tmp_path: Path) -> None:
    text = ("[rank0]:[E601 11:10:00.000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.\n")
    assert findings_of(tmp_path, text)[0].code == "load.nccl_failed"


def test_vllm_v0_worker_died_with_sigkill_is_a_kill(tmp_path: Path) -> None:
    # vllm/executor/multiproc_worker_utils.py WorkerMonitor.run: logger.error("Worker %s pid %s died, exit code: %s", ...)
    text = ("INFO 06-01 10:00:10 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: model='m', tensor_parallel_size=2\n"
            "ERROR 06-01 10:00:14 multiproc_worker_utils.py:116] Worker VllmWorkerProcess pid 5512 died, exit code: -9\n"
            "INFO 06-01 10:00:14 multiproc_worker_utils.py:120] Killing local vLLM worker processes\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "load.host_oom"
    assert found[0].evidence[0].endswith("died, exit code: -9")


def test_checkpoint_larger_than_ram_then_engine_core_death_is_host_oom(tmp_path: Path) -> None:
    # vllm/v1/engine/core_client.py MPClient monitor: "Engine core proc {name} died unexpectedly, shutting down client."
    text = (CHECKPOINT.format(ckpt="155.43", ram="35.60") + SHARDS +
            "(APIServer pid=1) ERROR 07-05 08:55:01 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, "
            "shutting down client.\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "load.host_oom"
    assert found[0].fixes[0].command == ("--load-format runai_streamer --model-loader-extra-config "
                                         "'{\"memory_limit\": 8589934592}'")


def test_sglang_capture_advice_is_not_the_eager_setting(tmp_path: Path) -> None:
    # sglang/srt/model_executor/cuda_graph_runner.py: raise Exception(f"Capture cuda graph failed: {e}\n" + "Possible
    # solutions:\n" ... "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n")
    text = ("[2025-03-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen2.5-72B-Instruct', tp_size=4)\n"
            "[2025-03-01 10:01:05 TP0] KV Cache is allocated. #tokens: 500000, K size: 19.07 GB, V size: 19.07 GB\n"
            "[2025-03-01 10:01:06 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=4.20 GB\n"
            "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity "
            "of 79.11 GiB of which 812.00 MiB is free.\n"
            "Possible solutions:\n"
            "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
            "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "load.runtime_oom"
    assert found[0].title == "out of GPU memory while capturing CUDA graphs"
    assert found[0].fixes[0].command == "--disable-cuda-graph"
    assert "perf.eager_mode" not in [f.code for f in found]
