"""Did NCCL / torch.distributed initialise? (unhandled system error, store timeouts with only some
ranks joined, watchdog timeouts). /dev/shm, GPU faults and TP errors are judged by their own
checks and explain this one."""

from __future__ import annotations

import re

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView

GLOO = re.compile(r"\bGloo\b|ProcessGroupGloo", re.I)
PEER = re.compile(r"peer access is not supported|cudaErrorPeerAccessUnsupported|CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", re.I)


@check("load.nccl", "load", codes=["load.nccl_failed"], events=["nccl_error", "dist_timeout"])
def nccl(facts: Facts, log: LogView) -> Outcome:
    """NCCL and the distributed store came up on every rank."""
    found = log.events("nccl_error", "dist_timeout")
    if not found:
        return Outcome(detail="no NCCL / distributed error in the log")
    if all(e.values.get("cascade") for e in found) and log.failed_before(found):
        # NCCL's watchdog or a rank losing its peer (doctor.logparse.chains WRAPPERS) after the run's own first error: the
        # collectives could not finish because that rank stopped; its error is the cause, judged where it is read
        return Outcome(detail="only NCCL's cascade (a watchdog timeout, a peer gone) after an earlier error of the run")
    timeout = log.events("dist_timeout")
    evidence = le.evidence(found) + log.earlier_runs()
    fixes = [Fix("Rerun with NCCL's own diagnosis to see which call failed", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET")]
    if any(GLOO.search(line) for e in found for line in e.lines):
        # torch.distributed's CPU group (the engines' coordination beside NCCL) picks its interface from the host name,
        # which /etc/hosts or a container's --network host may map to loopback: its peers then dial 127.0.0.1
        fixes.insert(0, Fix("Pin the interface Gloo (torch.distributed's CPU group) binds to: set GLOO_SOCKET_IFNAME, with "
                            "NCCL_SOCKET_IFNAME, to the interface the nodes reach each other by (list them with `ip -br addr`); "
                            "a host name that resolves to 127.0.x.x sends every peer to loopback"))
    port = le.first_value(found, "port")
    if isinstance(port, int):
        # torch's TCPStore (c10d socket.cpp) cannot bind rank 0's port: whatever holds it is still running
        evidence.append(f"the distributed store's port {port} is already in use")
        fixes.insert(0, Fix(f"Find what holds port {port} (a previous engine, a stale worker) and stop it, or start this one with "
                            "another port (MASTER_PORT, --master-port, SGLang's --dist-init-addr)", f"ss -ltnp 'sport = :{port}'"))
    if any(PEER.search(line) for e in found for line in e.lines):
        # cudaErrorPeerAccessUnsupported (CUDA error 217): these GPUs cannot map each other's memory, which NCCL's P2P
        # transport and the engines' custom all-reduce rely on; NCCL then goes through host memory instead
        fixes.insert(0, Fix("These GPUs cannot access each other peer-to-peer (PCIe without P2P, a VM, AWS G5): send NCCL "
                            "through host memory, and turn off the engine's custom all-reduce (vLLM --disable-custom-all-reduce)",
                            "NCCL_P2P_DISABLE=1"))
    if le.first_value(found, "backend") == "nccl":
        # lmdeploy device_comm.cc: TurboMind knows the NCCL communicator only when built with USE_NCCL; a build
        # without it (the Windows wheels) still has its own CUDA-IPC all-reduce for one node
        fixes.insert(0, Fix("This TurboMind build has no NCCL: use its CUDA-IPC communicator (one node), or an LMDeploy "
                            "build with NCCL (the Linux wheels)", "--communicator cuda-ipc"))
    if timeout:
        v = timeout[0].values
        if v.get("joined") is not None and v.get("world") is not None:
            evidence.append(f"only {v['joined']}/{v['world']} ranks joined" + (f" within {v['timeout']} s" if v.get("timeout") else ""))
        fixes.insert(0, Fix("Start every rank/node (same --nnodes, --dist-init-addr reachable from all of them) and check the other ranks' logs"))
    fixes += [
        Fix("Pin the network interface NCCL uses between hosts: set NCCL_SOCKET_IFNAME to the interface on the "
            "network the nodes reach each other by (list them with `ip -br addr`)"),
        Fix("If GPUs cannot talk peer-to-peer (VMs, some PCIe setups)", "NCCL_P2P_DISABLE=1"),
    ]
    return Outcome([Finding("load.nccl_failed", "NCCL / distributed initialisation failed", evidence, fixes, explains=le.CLIENT_SYMPTOMS)])
