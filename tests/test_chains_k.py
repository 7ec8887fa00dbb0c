"""Wrappers and cascades as their sources print them (doctor/logparse/chains.py): the worker's exception a
Ray wrapper names, a process's death a wrapper reports next to the kill that explains it, the ranks that
lost a peer after the peer's own error, a kubelet restarting what the engine's log says failed.

The logs are synthetic, in the exact shape the source named in each comment formats them; the values
(pids, addresses, sizes) are plausible ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.logparse import chains
from llm_doctor.logparse import events as ev
from tests.analysis import findings_of, written

# ray/exceptions.py RayTaskError.__str__: "ray::{function}() (pid=..., ip=..., actor_id=..., repr=...)" then the worker's
# traceback; the class is built by as_instanceof_cause as "RayTaskError(<the worker's exception class>)"
RAY_TASK_OOM = [
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::RayWorkerWrapper.execute_method() (pid=5512, ip=10.0.0.3, "
    "actor_id=ffab12, repr=<vllm.executor.ray_utils.RayWorkerWrapper object at 0x7f1>)",
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker_base.py", line 374, in execute_method',
    "    return executor(*args, **kwargs)",
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/model_runner.py", line 1200, in profile_run',
    "    self.execute_model(model_input, kv_caches, intermediate_tensors)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 23.65 GiB "
    "of which 2.10 GiB is free.",
]

# ray/exceptions.py ActorDiedError(cause=ActorDiedErrorContext): the base message, the tab-indented context, then the
# raylet's error_message (src/ray/raylet/node_manager.cc HandleClientConnectionError, one line)
RAY_ACTOR_DIED = [
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/executor/ray_gpu_executor.py", line 300, in _run_workers',
    "    ray_worker_outputs = ray.get(ray_worker_outputs)",
    '  File "/usr/local/lib/python3.10/dist-packages/ray/_private/worker.py", line 2623, in get',
    "    raise value.as_instanceof_cause()",
    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
    "\tclass_name: RayWorkerWrapper",
    "\tactor_id: 8e9f6c4d1f2a3b4c5d6e7f8a01000000",
    "\tpid: 2341",
    "\tnamespace: 5f1e2d3c-aaaa-bbbb-cccc-1234567890ab",
    "\tip: 10.0.0.2",
    "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker "
    "unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process "
    "is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed "
    "unexpectedly due to SIGSEGV or other unexpected errors.",
]


def test_ray_task_error_names_the_workers_gpu_oom_not_host_memory(tmp_path: Path) -> None:
    """RayTaskError(OutOfMemoryError) carries torch's OutOfMemoryError (the GPU's), not Ray's memory monitor
    (ray.exceptions.OutOfMemoryError is raised as itself, never inside a RayTaskError)."""
    findings = findings_of(written(tmp_path, "\n".join(RAY_TASK_OOM) + "\n"))
    assert findings[0].code == "load.runtime_oom", [f.code for f in findings]
    assert "load.host_oom" not in [f.code for f in findings]
    assert "tried to allocate 4.0 GiB; GPU total 23.65 GiB; free 2.1 GiB" in findings[0].evidence


def test_the_wrapper_line_alone_reads_the_class_as_the_gpus() -> None:
    line = RAY_TASK_OOM[0]
    assert chains.match(line) is None or chains.match(line)[0].kind != "host_oom"
    family = chains.family(line)
    assert family is not None and family.kind == "cuda_oom"


@pytest.mark.parametrize(("line", "kind"), [
    ("MemoryError", "host_oom"),  # Python's builtin
    ("builtins.MemoryError: Unable to allocate 12.0 GiB for an array", "host_oom"),
    ("torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)", None),
])
def test_memory_error_is_pythons_builtin_not_a_class_ending_in_it(line: str, kind: str | None) -> None:
    found = ev.match(line)
    assert (found[0].kind if found else None) == kind


def test_ray_actor_death_with_the_raylets_exit_detail_is_the_kill(tmp_path: Path) -> None:
    """The ActorDiedError reports the death; the raylet's SYSTEM_ERROR detail is the kill (the OOM killer's SIGKILL
    first among Ray's guesses): load.host_oom, and its "connection error code 2" is no client's refused connection."""
    findings = findings_of(written(tmp_path, "\n".join(RAY_ACTOR_DIED) + "\n"))
    assert findings[0].code == "load.host_oom", [f.code for f in findings]
    assert any("Worker unexpectedly exits with a connection error code 2" in line for line in findings[0].evidence)
    assert "access.connect_failed" not in [f.code for f in findings]


def test_vllm_worker_death_then_killed_is_the_kill(tmp_path: Path) -> None:
    """vllm/v1/executor/multiproc_executor.py monitor_workers logs the death of a worker that raised nothing;
    the shell's `Killed` is the kill it reports, not a launcher killing itself after a child's exception."""
    log = written(tmp_path, "\n".join([
        "INFO 05-20 10:00:00 [api_server.py:1043] vLLM API server version 0.9.0",
        "(VllmWorker rank=0 pid=512) INFO 05-20 10:00:10 [gpu_model_runner.py:1329] Starting to load model "
        "meta-llama/Llama-3.1-70B-Instruct...",
        "ERROR 05-20 10:01:10 [multiproc_executor.py:140] Worker proc VllmWorker-1 died unexpectedly, shutting down executor.",
        "Killed",
    ]) + "\n")
    findings = findings_of(log)
    assert findings[0].code == "load.host_oom", [f.code for f in findings]
    assert any(line.endswith(": Killed") for line in findings[0].evidence)


def test_the_ranks_that_lost_their_peer_come_after_the_peers_oom(tmp_path: Path) -> None:
    """Rank 1's ncclRemoteError (torch ProcessGroupNCCL.cpp getNcclErrorDetailStr, NCCL socket.cc) is printed
    before rank 0's own CUDA OOM: the OOM that stopped rank 0 is the cause, the NCCL error its cascade."""
    w = "(RayWorkerWrapper pid=3000, ip=10.0.0.2) [rank1]: "
    e = "ERROR 06-01 10:00:10 worker_base.py:382] "
    log = written(tmp_path, "\n".join([
        w + "Traceback (most recent call last):",
        w + "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2006, "
        "remote process exited or there was a network error, NCCL version 2.21.5",
        w + "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
        w + "Last error:",
        w + "socketProgress: Connection closed by remote peer gpu-node-1<52344>",
        e + "Error executing method 'determine_num_available_blocks'. This might cause deadlock in distributed execution.",
        e + "Traceback (most recent call last):",
        e + '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 200, in determine_num_available_blocks',
        e + "    self.model_runner.profile_run()",
        e + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 39.38 GiB "
        "of which 1.55 GiB is free.",
    ]) + "\n")
    codes = [f.code for f in findings_of(log)]
    assert codes[:2] == ["load.runtime_oom", "load.nccl_failed"], codes


def test_a_peer_gone_alone_is_still_nccl() -> None:
    """A cascade only orders: with nothing before it the lost peer is the distributed failure it is."""
    line = "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."
    rule, values = chains.match(line)
    assert rule.kind == "nccl_error" and values["cascade"] == "NCCL peer gone"


# each wrapper as its source writes it
@pytest.mark.parametrize(("line", "wrapper"), [
    # kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go, kubectl describe's container state
    ("  Warning  BackOff    87s (x23 over 6m33s)   kubelet   Back-off restarting failed container vllm in pod vllm-0",
     "Kubernetes restart"),
    ("      Reason:       CrashLoopBackOff", "Kubernetes restart"),
    # litellm/router.py RouterRateLimitError
    ("litellm.exceptions.RateLimitError: No deployments available for selected model, Try again in 60 seconds. "
     "Passed model=llama3. pre-call-checks=False, cooldown_list=['f3a1']", "LiteLLM router"),
    # gloo/transport/tcp/pair.cc
    ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.1]:5432",
     "NCCL peer gone"),
    # vllm/v1/engine/core_client.py
    ("ERROR 12-01 23:08:02 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
     "vLLM engine core death"),
    # ray/exceptions.py WorkerCrashedError, ActorDiedError (no cause), ActorDiedError(cause=RayTaskError)
    ("ray.exceptions.WorkerCrashedError: The worker died unexpectedly while executing this task. Check python-core-worker-*.log "
     "files for more information.", "Ray actor death"),
    ("ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.", "Ray actor death"),
    ("ray.exceptions.ActorDiedError: The actor died because of an error raised in its creation task, "
     "ray::RayWorkerWrapper.__init__() (pid=1, ip=10.0.0.2)", "Ray actor"),
])
def test_wrapper_wordings(line: str, wrapper: str) -> None:
    assert chains.cascade(line) == wrapper


def test_a_kubelet_restart_pasted_before_the_engine_log_comes_after_the_engines_error(tmp_path: Path) -> None:
    """`kubectl describe` first, `kubectl logs --previous` after it: the restart is the cascade of the engine's error."""
    log = written(tmp_path, "\n".join([
        "$ kubectl describe pod vllm-0",
        "    State:          Waiting",
        "      Reason:       CrashLoopBackOff",
        "  Warning  BackOff    87s (x23 over 6m33s)   kubelet   Back-off restarting failed container vllm in pod vllm-0",
        "$ kubectl logs vllm-0 --previous",
        "INFO 06-01 10:00:00 api_server.py:585] vLLM API server version 0.6.3",
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV "
        "cache (12320). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    ]) + "\n")
    findings = findings_of(log)
    assert findings[0].code == "load.kv_cache_insufficient", [f.code for f in findings]
    assert findings[0].fixes[0].command == "--max-model-len 12320"


def test_torchrun_root_cause_block_reads_the_childs_traceback(tmp_path: Path) -> None:
    """torch/distributed/elastic/multiprocessing/errors/__init__.py _MSG_FORMAT_TEMPLATE: the ChildFailedError's
    "Root Cause (first observed failure)" holds the child's traceback from its error file; its exception is the cause."""
    log = written(tmp_path, "\n".join([
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "serve.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-08-25_17:31:27",
        "  host      : gpu-node-1",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : 1 (pid: 8158)",
        "  error_file: /tmp/torchelastic_x/none_y/attempt_0/0/error.json",
        "  traceback : Traceback (most recent call last):",
        '    File "/app/serve.py", line 12, in main',
        '      dist.init_process_group("nccl")',
        "  torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
        "============================================================",
    ]) + "\n")
    findings = findings_of(log)
    assert findings[0].code == "load.nccl_failed", [f.code for f in findings]


def test_an_engine_crash_quoted_in_a_gateways_503_is_the_engines_failure(tmp_path: Path) -> None:
    """openai-python's APIStatusError "Error code: {status} - {body}" (relayed by LiteLLM's exception mapping) quoting
    vLLM's ErrorResponse: the illegal memory access is the engine's crash, named by its own words, not the client's."""
    log = written(tmp_path, "litellm.exceptions.InternalServerError: litellm.InternalServerError: OpenAIException - Error code: 503 - "
                  "{'object': 'error', 'message': 'CUDA error: an illegal memory access was encountered', 'type': "
                  "'ServiceUnavailableError', 'param': None, 'code': 503}\n")
    top = findings_of(log)[0]
    assert top.code == "load.unrecognized_failure"
    assert top.title.endswith("no known cause matches: CUDA error: an illegal memory access was encountered")
    assert top.fixes[0].command == '"CUDA error: an illegal memory access was encountered"'
    assert "access.server_error" in top.explains
