"""Distributed start-up failures as the sources write them: torch's c10d store sockets (socket.cpp), its
elastic rendezvous errors (rendezvous/api.py), and NCCL's CUDACHECK quoting a CUDA device error
(src/include/checks.h), alone or as the "Last error:" of torch's DistBackendError; memory held by other
processes as torch < 2.1's OOM message states it (CUDACachingAllocator.cpp), and host RAM as numpy states
it (_exceptions.py). Each case names the code that must rank first, a piece of its evidence and its first
fix's exact command."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one

DIST_BACKEND = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
                "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5")

# (name, log lines, rank-1 code, a substring of its evidence, the first fix's exact command or None)
CASES = [
    # SocketListenOp::tryListen records the bind failure (error.h: "(errno: N - text)"): the store's port is held
    ("c10d-bind-in-use", [
        "[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).",
    ], "load.nccl_failed", "failed to bind to [::]:29500", "ss -ltnp 'sport = :29500'"),
    # SocketListenOp::run joins every recorded error after its own sentence: the port is read from the first bind error
    ("c10d-listen-any", [
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "The server socket has failed to bind to [::]:29501 (errno: 98 - Address already in use). "
        "The server socket has failed to bind to 0.0.0.0:29501 (errno: 98 - Address already in use).",
    ], "load.nccl_failed", "failed to listen on any local network address", "ss -ltnp 'sport = :29501'"),
    # SocketConnectOp::run: a rank never reached the store; the joined errno text ("No route to host") is no client's API call
    ("c10d-connect-any", [
        "torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of (10.0.0.1, 29500). "
        "The client socket has failed to connect to 10.0.0.1:29500 (errno: 113 - No route to host).",
    ], "load.nccl_failed", "any network address of (10.0.0.1, 29500)", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"),
    # the keyword family: DistNetworkError with a bare errno text
    ("c10d-network-error", [
        "torch.distributed.DistNetworkError: Connection reset by peer",
    ], "load.nccl_failed", "DistNetworkError", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"),
    # torchrun: not every node joined the rendezvous in time; the fix starts the other nodes first
    ("rendezvous-timeout", [
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
    ], "load.nccl_failed", "RendezvousTimeoutError", None),
    ("rendezvous-connection", [
        "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed. "
        "See inner exception for details.",
    ], "load.nccl_failed", "RendezvousConnectionError", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"),
    # NCCL's CUDACHECK quoting cudaErrorSystemNotReady: the fabric manager, whatever NCCL then reports
    ("nccl-system-not-ready", [
        DIST_BACKEND, "ncclUnhandledCudaError: Call to CUDA function failed.", "Last error:",
        "Cuda failure 'system not yet initialized'",
    ], "load.gpu_not_visible", "system not yet initialized", "sudo systemctl enable --now nvidia-fabricmanager"),
    ("nccl-no-device", [
        "node1:31:31 [0] init.cc:1234 NCCL WARN Cuda failure 'no CUDA-capable device is detected'",
    ], "load.gpu_not_visible", "no CUDA-capable device", "--gpus all"),
    # cudaErrorInvalidDevice: a rank given a GPU index it cannot see
    ("nccl-invalid-ordinal", [
        DIST_BACKEND, "ncclUnhandledCudaError: Call to CUDA function failed.", "Last error:",
        "Cuda failure 'invalid device ordinal'",
    ], "load.gpu_not_visible", "invalid device ordinal", None),
    # torch < 2.1: 10.76 GiB total, 2.56 MiB free and nothing in this process's cache: another process holds the card
    ("old-oom-other-process", [
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 10.76 GiB total capacity; 0 bytes already "
        "allocated; 2.56 MiB free; 0 bytes reserved in total by PyTorch)",
    ], "load.gpu_memory_occupied", "neither free (0.00 GiB) nor in this process's PyTorch cache (0.00 GiB reserved)",
     "nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv"),
    # the same format with the process's own cache filling the card: its own OOM, no other process
    ("old-oom-own-cache", [
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 22.19 GiB total capacity; "
        "20.10 GiB already allocated; 1.02 GiB free; 20.20 GiB reserved in total by PyTorch)",
    ], "load.runtime_oom", "Tried to allocate 1.50 GiB", "--max-num-seqs 128"),
    # torch 2.1+ naming no process (no NVML): 23.69 GiB total, 10.56 MiB free, 1.30 GiB in this process's cache
    ("new-oom-no-process", [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.69 GiB of "
        "which 10.56 MiB is free. Of the allocated memory 1.20 GiB is allocated by PyTorch, and 100.00 MiB is reserved by "
        "PyTorch but unallocated.",
    ], "load.gpu_memory_occupied", "in this process's PyTorch cache (1.30 GiB reserved)",
     "nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv"),
    # 4.9 GiB outside the cache of a 23.55 GiB card is within what the process itself holds outside PyTorch: no other process
    ("new-oom-own-non-torch", [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 26.00 MiB. GPU 0 has a total capacity of 23.55 GiB of "
        "which 25.94 MiB is free. Of the allocated memory 18.60 GiB is allocated by PyTorch, and 20.02 MiB is reserved by "
        "PyTorch but unallocated.",
    ], "load.runtime_oom", "Tried to allocate 26.00 MiB", "--max-num-seqs 128"),
    # NCCL 2.12's shmutils.cc names the /dev/shm segment it could not map, with no size or errno
    ("nccl-2.12-could-not-map", [
        "node1:1:1 [0] misc/shmutils.cc:46 NCCL WARN Could not map /dev/shm/nccl-AbCdEf",
    ], "load.shm_insufficient", "Could not map /dev/shm/nccl-AbCdEf", "--ipc=host"),
    ("numpy-array-memory", [
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.20 GiB for an array with shape (859832320,) and "
        "data type float32",
    ], "load.host_oom", "Unable to allocate 3.20 GiB", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_distributed_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)
