"""Is the GPU-to-GPU path as fast as it should be? (perf.slow_interconnect)

Tensor parallelism all-reduces activations twice per layer per token; over NVLink that is cheap,
through PCIe host bridges (PHB/NODE/SYS in `topo -m`) without P2P it goes through host memory and
caps decode speed. A PCIe link trained below its width (x8 of x16) or, under load, its generation
halves host<->GPU bandwidth whatever the engine does. NCCL told to avoid P2P/IB falls back to
slower transports. Reads GPU facts (topology, P2P, PCIe link state) and the engine config.
"""

from __future__ import annotations

import re
from itertools import combinations

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import STATEMENT, Finding, Fix, NotApplicable, Outcome
from llm_doctor.logparse.topo import level_is_nvlink
from llm_doctor.logview import LogView

# worse is larger; NV# is best
LEVEL_RANK = {"X": 0, "PIX": 2, "PXB": 3, "PHB": 4, "NODE": 5, "SYS": 6}
PCIE_LEVEL_WORDS = {
    "PIX": "one PCIe switch",
    "PXB": "several PCIe bridges",
    "PHB": "the CPU's PCIe host bridge",
    "NODE": "host bridges inside a NUMA node",
    "SYS": "the CPU socket interconnect (QPI/UPI)",
}
BUSY_UTIL = 20.0  # percent: below this a lower PCIe generation is the driver saving power, not a fault


def rank(level: str) -> int:
    return 1 if level_is_nvlink(level) else LEVEL_RANK.get(level, 6)


# the NVLink bandwidth each GPU has to its peers, one direction (GB/s), by the name CUDA and nvidia-smi give it:
# NVIDIA's datasheets (V100 SXM2 6 links, A100 SXM4 12, A800/H800 8, H100/H200/H20 SXM 18 of 25 GB/s; B200 NVLink 5).
# PCIe parts (" PCIe", "NVL" bridge pairs, workstation cards) are not here: PCIe gives no floor to judge by.
NVLINK_GBS = (
    (re.compile(r"\b[BG]B?200\b"), 900.0),
    (re.compile(r"\bH800\b(?!.*PCIe)"), 200.0),
    (re.compile(r"\b(?:H100|H200|H20)\b(?!.*(?:PCIe|NVL))"), 450.0),
    (re.compile(r"\bA800-SXM"), 200.0),
    (re.compile(r"\bA100-SXM"), 300.0),
    (re.compile(r"\bV100-SXM"), 150.0),
)
NVLINK_SHARE = 0.25  # an all-reduce over NVLink reaches ~75 % of it in nccl-tests' busbw; under a quarter it is not on NVLink
NET_FLOOR_GBS = 5.0  # busbw between nodes below this is TCP sockets' class: one 100 Gb/s RDMA NIC alone carries ~12 GB/s
# busbw inside one node below this is below any PCIe path of a GPU server: PCIe 3.0 x16 carries ~12 GB/s peer to peer and
# 6-9 through host memory (x8 half that); under 4 GB/s the GPUs share a degraded or x4 link, or a peer path that is
# blocked (ACS on the PCIe switch, IOMMU) so every transfer bounces through the CPU
PCIE_FLOOR_GBS = 4.0
# a statement that the collectives cross machines: NCCL's NET transport then carries them
CROSS_NODE = re.compile(r"\b(?:cross|inter|multi)[- ]?nodes?\b|\b(?:across|between) (?:the )?(?:two |2 |multiple |several |\d+ )?(?:nodes|machines|hosts)\b", re.I)


# ... or said of the boxes a run spans: "on 2 DGX Sparks", "our back-to-back pair", "node-to-node" (a GB10 box is one GPU)
NODES_SAID = re.compile(r"\bnode[- ]to[- ]node\b|\bback[- ]to[- ]back (?:pair|nodes|link|QSFP|cable)|"
                        r"\b(?:two|2|[3-9]|1[0-6])\s?x?\s(?:nodes|machines|hosts|servers|(?:DGX )?Sparks|GB10s|GX10s)\b", re.I)


@check("perf.interconnect", "perf", codes=["perf.slow_interconnect"], any_of=("gpus", "logs", "metrics", "stated"),
       events=["custom_allreduce_off", "nccl_net_socket", "nccl_p2p_off"])
def interconnect(facts: Facts, log: LogView | None) -> Outcome:
    """TP traffic runs over NVLink or P2P, PCIe links run at their full width, NCCL keeps its fast transports."""
    cfg = fv.maybe_deployment(facts)
    logged = (_logged_no_p2p(facts, log) or _nccl_p2p_off(facts, log)) if log else None
    sockets = _nccl_sockets_across_nodes(facts, log, cfg) if log else None
    rpc = _llamacpp_rpc(cfg)
    measured = _nccl_tests(facts) or _stated_busbw(facts)
    g = fv.maybe_gpus(facts)
    if g is None:
        findings = [f for f in (measured, sockets, logged, rpc) if f]
        busbw = facts.metrics.values.get("nccl_busbw_gbs") if facts.metrics is not None else None
        quiet = f"nccl-tests busbw {busbw:g} GB/s: not below the NVLink or network floor" if busbw is not None else "no GPU facts, and the log shows no interconnect signal"
        return Outcome(findings, "" if findings else quiet)
    findings = [f for f in (_tp_over_pcie(facts, g, cfg), _degraded_links(g), _nccl_env(cfg, g), measured, sockets, rpc) if f]
    if logged is not None and not any("PCIe (" in f.title or "NCCL_P2P_DISABLE" in f.title for f in findings):
        findings.append(logged)
    if not findings and not g.topology and all(x.pcie_width_current is None for x in g.gpus):
        raise NotApplicable("no topology or PCIe link facts (nvidia-smi topo -m, -q, or NVML)")
    return Outcome(findings, "" if findings else "GPU links as expected")


def _nccl_tests(facts: Facts) -> Finding | None:
    """An nccl-tests run (doctor/logparse/nccl_tests.py) whose bus bandwidth at the large sizes is far below
    the link the GPUs have: inside one node of NVLink GPUs under NVLINK_SHARE of their NVLink (the traffic
    takes PCIe or host memory: P2P off, NVLink down, no fabric manager), between nodes under NET_FLOOR_GBS
    (sockets, not RDMA)."""
    m = facts.metrics if facts.metrics is not None and facts.metrics.available else None
    busbw = m.values.get("nccl_busbw_gbs") if m else None
    if m is None or busbw is None or m.values.get("nccl_ranks", 0) < 2:
        return None
    hosts, ranks, gpu = int(m.values.get("nccl_hosts", 1)), int(m.values["nccl_ranks"]), m.raw.get("nccl_gpu", "")
    size = f"{m.values.get('nccl_size_bytes', 0) / 1024**2:.0f} MiB"
    evidence = [m.raw["nccl_busbw_gbs"], f"busbw {busbw:g} GB/s at {size} over {ranks} GPUs on {hosts} host(s)" + (f" ({gpu})" if gpu else "")]
    if hosts > 1:
        if busbw >= NET_FLOOR_GBS:
            return None
        evidence.append(f"below {NET_FLOOR_GBS:g} GB/s between nodes: TCP sockets' class, not RDMA (InfiniBand / RoCE)")
        return Finding("perf.slow_interconnect", f"NCCL moves {busbw:g} GB/s between {hosts} nodes: the traffic takes TCP sockets",
                       evidence, [Fix("See which transport NCCL picks (NET/IB is RDMA, NET/Socket is TCP) and give it the RDMA NICs "
                                      "(NCCL_IB_HCA, the NCCL RDMA/EFA plugin, NCCL_IB_DISABLE unset)",
                                      "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET " + _rerun(m, ranks, hosts))],
                       explains=["perf.low_gpu_util", "perf.high_latency"])
    if "nccl_compared" in m.raw:
        evidence.append(m.raw["nccl_compared"])
    nvlink = next((gbs for rx, gbs in NVLINK_GBS if rx.search(gpu)), None)
    if nvlink is None and busbw < PCIE_FLOOR_GBS:
        evidence.append(f"below {PCIE_FLOOR_GBS:g} GB/s inside one node: under any PCIe path's class (PCIe 3.0 x16 carries ~12 GB/s "
                        "peer to peer, 6-9 through host memory)")
        return Finding("perf.slow_interconnect", f"NCCL reaches {busbw:g} GB/s between {ranks} GPUs in one node: the PCIe path is degraded "
                       "or peer-to-peer is blocked", evidence,
                       [Fix("See whether the GPUs can reach each other peer to peer and how they are linked (ACS enabled on a PCIe "
                            "switch or the IOMMU blocks P2P; a link trained at x4 or Gen1)",
                            "nvidia-smi topo -p2p r; nvidia-smi topo -m; nvidia-smi -q -d PCIE | grep -A3 'Link Width'")],
                       explains=["perf.low_gpu_util", "perf.high_latency"])
    if nvlink is None or busbw >= NVLINK_SHARE * nvlink:
        return None
    evidence.append(f"{gpu} has {nvlink:g} GB/s of NVLink per GPU: {busbw / nvlink:.0%} of it reached (an all-reduce over "
                    f"NVLink reaches about 75%)")
    return Finding("perf.slow_interconnect", f"NCCL reaches {busbw:g} GB/s between {ranks} NVLink GPUs: the traffic is not on NVLink",
                   evidence, [Fix("Check the NVLink links and the path NCCL takes (NV# in topo -m; NCCL_P2P_DISABLE / "
                                  "NCCL_P2P_LEVEL unset; on NVSwitch systems nvidia-fabricmanager running)",
                                  "nvidia-smi nvlink --status; nvidia-smi topo -m; systemctl status nvidia-fabricmanager")],
                   explains=["perf.low_gpu_util", "perf.high_latency"])


def _stated_busbw(facts: Facts) -> Finding | None:
    """An nccl-tests bus bandwidth a person states (doctor/logparse/perf_prose.py): set against another set-up of the
    same test that reached BUSBW_GAIN times more, the slow run's path is what differs (warn); said low between nodes
    under NET_FLOOR_GBS, it is TCP sockets' class (warn); else it is reported as said (info)."""
    said = next((s for s in facts.stated if s.code == "perf.slow_interconnect" and "busbw_gbs" in s.measures), None)
    if said is None:
        return None
    busbw, other = said.measures["busbw_gbs"], said.measures.get("busbw_other_gbs")
    evidence = [f"{said.where}: {said.text}"]
    nodes = bool(CROSS_NODE.search(said.text) or NODES_SAID.search(said.text))
    fix = Fix("See which transport and NICs NCCL picks for the data path (NET/IB is RDMA, NET/Socket is TCP; NCCL_IB_HCA names "
              "every RDMA port, NCCL_SOCKET_IFNAME only the bootstrap)", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET all_reduce_perf -b 8 -e 8G -f 2 -g 1")
    if other is not None:
        evidence.append(f"busbw {busbw:g} GB/s against {other:g} GB/s of the same test on the other set-up ({other / busbw:.2f}x): "
                        "the slow run's path (NICs, transport, PCIe link) is the bottleneck")
        return Finding("perf.slow_interconnect", f"NCCL reaches {busbw:g} GB/s where the same test reached {other:g} GB/s",
                       evidence, [fix], explains=["perf.low_gpu_util", "perf.high_latency"])
    if nodes and busbw < NET_FLOOR_GBS:
        evidence.append(f"below {NET_FLOOR_GBS:g} GB/s between nodes: TCP sockets' class, not RDMA (InfiniBand / RoCE)")
        return Finding("perf.slow_interconnect", f"NCCL moves {busbw:g} GB/s between nodes: the data path is not on RDMA",
                       evidence, [fix], explains=["perf.low_gpu_util", "perf.high_latency"])
    evidence.append("said low in words: the GPUs and the link it ran on are not in the input")
    return Finding("perf.slow_interconnect", f"NCCL's bus bandwidth is said to be low ({busbw:g} GB/s)", evidence, [fix],
                   severity="info", tier=STATEMENT)


def _rerun(m, ranks: int, hosts: int) -> str:
    test = m.raw.get("nccl_test", "all_reduce_perf")
    per_host = max(ranks // max(hosts, 1), 1)
    return f"mpirun -np {hosts} -N 1 {test} -b 8 -e 8G -f 2 -g {per_host}"


def _logged_no_p2p(facts: Facts, log: LogView) -> Finding | None:
    """vLLM says why it turned its custom all-reduce off: no P2P, or more than two PCIe-only GPUs.
    Both mean the TP all-reduce runs through NCCL over PCIe/host memory. ("spans across nodes"
    is the parallel layout, judged by perf.parallelism.)"""
    from llm_doctor.checks.load import log_events as le

    found = [e for e in log.events("custom_allreduce_off") if re.search(r"P2P|PCIe-only", " ".join(e.lines), re.I)]
    if not found:
        return None
    cfg = fv.maybe_deployment(facts)
    tp = (cfg.tensor_parallel_size if cfg else None) or 0
    engine = cfg.engine if cfg and cfg.engine else "vllm"
    fixes = []
    if tp >= 4 and (fix := _replicas_fix(facts, cfg, engine, tp, "On PCIe GPUs prefer replicas")):
        fixes.append(fix)
    fixes.append(Fix("Check the link between the GPUs (NV# for NVLink, PIX/PXB share a PCIe switch)", "nvidia-smi topo -m"))
    return Finding("perf.slow_interconnect", "the engine found no P2P/NVLink path between its GPUs: TP all-reduce runs over PCIe",
                   le.evidence(found[:1]), fixes, explains=["perf.low_gpu_util", "perf.high_latency"])


def _nccl_p2p_off(facts: Facts, log: LogView) -> Finding | None:
    """NCCL runs without GPU peer-to-peer: NCCL_P2P_DISABLE=1 in its environment, or its channels
    between GPUs of one node go through shared host memory (SHM). Every TP all-reduce then makes a
    round trip through host RAM. Often a workaround for boards whose P2P hangs, so the first fix is
    to test P2P, the second to need less all-reduce (replicas instead of TP)."""
    from llm_doctor.checks.load import log_events as le

    found = log.events("nccl_p2p_off")
    if not found:
        return None
    cfg = fv.maybe_deployment(facts)
    tp = (cfg.tensor_parallel_size if cfg else None) or 0
    engine = cfg.engine if cfg and cfg.engine else "vllm"
    fixes = [Fix("Test peer-to-peer between the GPUs (OK in every cell: P2P works, so drop NCCL_P2P_DISABLE)",
                 "nvidia-smi topo -p2p r")]
    if tp >= 2 and (fix := _replicas_fix(facts, cfg, engine, tp, "Without P2P prefer replicas")):
        fixes.append(fix)
    return Finding("perf.slow_interconnect", "NCCL runs without GPU peer-to-peer: every all-reduce goes through host memory",
                   le.evidence(found[:1]), fixes, explains=["perf.low_gpu_util", "perf.high_latency"])


def _replicas_fix(facts: Facts, cfg, engine: str, tp: int, why: str) -> Fix | None:
    """TP/2 x DP 2: half the all-reduce traffic per token, if the model's weights fit TP/2. With the
    model and the GPU size known the weights per GPU say so (no fix when they do not fit at all);
    without them the fix says what to check."""
    from llm_doctor.checks.load import log_events as le
    from llm_doctor.checks.perf.parallelism import smaller_weights

    half = tp // 2
    command = fv.command(engine, ("tp", half), ("dp", 2))
    total = le.gpu_total_gib(facts)
    if facts.model is None or cfg is None or not total:
        return Fix(f"{why}: TP {half} x DP 2 halves the all-reduce traffic (if the model fits TP {half})", command)
    weights = smaller_weights(facts, cfg, half)
    budget = (cfg.gpu_memory_utilization or 0.9) * total
    if weights >= budget:
        return None
    return Fix(f"{why}: TP {half} x DP 2 halves the all-reduce traffic ({facts.model.name}: {weights:.1f} GiB of weights "
               f"per GPU at TP {half}, of {total:.0f} GiB)", command)


def _llamacpp_rpc(cfg) -> Finding | None:
    """llama.cpp's RPC backend (`--rpc host:port,...`) puts layers on other machines' GPUs: every
    token's activations cross the network at each boundary between local and remote layers, so
    the network link, not the GPUs, sets the speed."""
    if cfg is None or cfg.engine != "llamacpp":
        return None
    servers = [x.strip() for x in str(cfg.extra.get("--rpc") or cfg.extra.get("rpc") or "").split(",") if x.strip()]
    if not servers:
        return None
    hosts = list(dict.fromkeys(x.rsplit(":", 1)[0] for x in servers))
    return Finding(
        "perf.slow_interconnect",
        f"layers run on {len(servers)} RPC server(s) on {len(hosts)} other host(s): each token crosses the network",
        [f"--rpc {','.join(servers)} ({cfg.sources.get('rpc', 'command line')})"],
        [Fix("If the model fits the local GPUs, serve it without --rpc (a shorter context or a smaller quantization helps it fit)"),
         # a host the paste redacted (`<PRIVATE_IP_2>`) is no address to run a command against
         Fix("Otherwise measure the link to the RPC host with iperf3: llama.cpp RPC wants a fast LAN, not a VPN or Wi-Fi",
             None if hosts[0].startswith("<") else f"iperf3 -c {hosts[0]}")],
        explains=["perf.high_latency", "perf.low_gpu_util"],
    )


def _tp_over_pcie(facts: Facts, g, cfg) -> Finding | None:
    tp = (cfg.tensor_parallel_size or 1) if cfg else 1
    if tp < 2 or not g.topology:
        return None
    visible = fv.visible_indices(cfg, g) or list(range(len(g.topology)))
    group = [i for i in visible[:tp] if i < len(g.topology)]
    if len(group) < 2:
        return None
    pairs = [(i, j, g.topology[i][j]) for i, j in combinations(group, 2)]
    worst = max(pairs, key=lambda p: rank(p[2]))
    if level_is_nvlink(worst[2]):
        return None
    p2p_bad = [(i, j, g.p2p[i][j]) for i, j in combinations(group, 2) if g.p2p and g.p2p[i][j] not in ("OK", "X", "")]
    consumer = sorted({x.name for i in group if (x := g.by_index(i)) and "geforce" in x.name.lower()})
    if rank(worst[2]) <= LEVEL_RANK["PXB"] and not p2p_bad and not consumer:
        return None  # behind one PCIe switch P2P works: the best a PCIe box gives
    evidence = [f"tensor_parallel_size={tp}; GPUs {','.join(map(str, group))}"]
    evidence.append(
        f"topo -m: GPU{worst[0]}<->GPU{worst[1]} = {worst[2]} (through {PCIE_LEVEL_WORDS.get(worst[2], 'PCIe')}), "
        + ", ".join(f"GPU{i}-GPU{j} {lvl}" for i, j, lvl in pairs[:6])
    )
    if p2p_bad:
        evidence.append("P2P read status: " + ", ".join(f"GPU{i}-GPU{j} {s}" for i, j, s in p2p_bad[:6]) + " (no peer-to-peer)")
    elif consumer:
        evidence.append(f"{', '.join(consumer)}: the driver offers no PCIe peer-to-peer on GeForce cards, so traffic bounces through host memory")
        p2p_bad = [(group[0], group[1], "GeForce")]
    fixes = []
    best = _best_group(g, tp)
    if best and max(rank(g.topology[i][j]) for i, j in combinations(best, 2)) < rank(worst[2]):
        levels = sorted({g.topology[i][j] for i, j in combinations(best, 2)}, key=rank)
        fixes.append(Fix(f"Run TP on GPUs joined by {'/'.join(levels)} instead of {worst[2]}",
                         f"CUDA_VISIBLE_DEVICES={','.join(map(str, best))}"))
    engine = cfg.engine if cfg else "vllm"
    if tp >= 2 and (fix := _replicas_fix(facts, cfg, engine, tp, "Over PCIe, prefer replicas to TP")):
        fixes.append(fix)
    fixes.append(Fix("For TP across GPUs, NVLink/NVSwitch (SXM) or NVLink-bridged GPUs give the all-reduce bandwidth TP needs"))
    return Finding("perf.slow_interconnect",
                   f"TP={tp} all-reduces cross PCIe ({worst[2]}){' without P2P' if p2p_bad else ''}: no NVLink between the TP GPUs",
                   evidence, fixes, explains=["perf.low_gpu_util", "perf.high_latency"])


def _best_group(g, size: int) -> list[int] | None:
    """The set of `size` GPUs whose worst pairwise link is best (NVLink bridge pairs, one PCIe switch)."""
    n = len(g.topology)
    if size > n or n > 16:
        return None
    best, best_rank = None, 99
    for group in combinations(range(n), size):
        r = max(rank(g.topology[i][j]) for i, j in combinations(group, 2))
        if r < best_rank:
            best, best_rank = list(group), r
    return best


def _degraded_links(g) -> Finding | None:
    """A link trained narrower than its maximum, or slower while the GPU is busy. Idle GPUs drop
    the generation (and some boards the width) to save power, so an idle narrow link is reported
    as info, to be confirmed under load; an idle lower generation alone is normal."""
    bad, confirmed = [], False
    for x in g.gpus:
        busy = x.util_gpu is not None and x.util_gpu.mean >= BUSY_UTIL
        full_gen = bool(x.pcie_gen_current and x.pcie_gen_max and x.pcie_gen_current >= x.pcie_gen_max)
        gen = f" at Gen{x.pcie_gen_current} of Gen{x.pcie_gen_max}" if x.pcie_gen_current and x.pcie_gen_max else ""
        state = f", {x.util_gpu.mean:g}% busy" if x.util_gpu is not None else ""
        if x.pcie_width_current and x.pcie_width_max and x.pcie_width_current < x.pcie_width_max:
            confirmed |= busy or full_gen
            bad.append((x, f"GPU{x.index} {x.bus_id}: PCIe link width x{x.pcie_width_current} of x{x.pcie_width_max}{gen}{state}"))
        elif x.pcie_gen_current and x.pcie_gen_max and x.pcie_gen_current < x.pcie_gen_max and busy:
            confirmed = True
            bad.append((x, f"GPU{x.index} {x.bus_id}: PCIe Gen{x.pcie_gen_current} of Gen{x.pcie_gen_max}{state}"))
    if not bad:
        return None
    first = bad[0][0]
    device = f"-s {first.bus_id.split(':', 1)[-1]}" if first.bus_id else "-d 10de:"  # else every NVIDIA device
    fixes = [Fix("Confirm the trained link (LnkSta vs LnkCap), then reseat the GPU or riser, use an x16 slot, "
                 "and check the BIOS PCIe generation setting", f"sudo lspci -vv {device} | grep -E 'LnkCap|LnkSta'")]
    if not confirmed:
        fixes.insert(0, Fix("The GPU was idle: read the link again under load (idle GPUs may train down to save power)",
                            f"nvidia-smi -i {first.index} --query-gpu=pcie.link.gen.current,pcie.link.width.current --format=csv"))
    return Finding("perf.slow_interconnect", f"{len(bad)} GPU PCIe link(s) run below their maximum"
                   + ("" if confirmed else " (measured while idle)"),
                   [b for _, b in bad], fixes, severity="warn" if confirmed else "info", explains=["perf.high_latency"])


def _nccl_sockets_across_nodes(facts: Facts, log: LogView, cfg) -> Finding | None:
    """NCCL printing `NET/Socket : Using <iface>` picked TCP for its network transport. Within one
    node that is harmless (P2P/NVLink/SHM carry the traffic); across nodes it means no IB/RoCE/EFA
    transport was found, and TP/PP traffic between nodes crawls over Ethernet."""
    from llm_doctor.checks.load import log_events as le

    found = log.events("nccl_net_socket")
    hosts = {str(e.values.get("host")) for e in found if e.values.get("host")}
    # (the reporter's own words may be all that says the traffic crosses machines: "cross-node AllReduce ...")
    said = next((st for st in facts.stated if CROSS_NODE.search(st.text)), None)
    nodes = max(len(hosts), (cfg.nnodes or 1) if cfg else 1, 2 if said is not None else 1)
    if not found or nodes < 2:
        return None
    iface = str(found[0].values.get("ifaces", "")).split(":", 1)[0].removeprefix("[0]")
    return Finding(
        "perf.slow_interconnect",
        f"NCCL uses TCP sockets ({iface or 'Ethernet'}) between {nodes} nodes: no InfiniBand/RoCE transport was found",
        le.evidence(found[:2]) + (["NCCL_IB_DISABLE=1 in the engine's environment"] if cfg and cfg.env.get("NCCL_IB_DISABLE") == "1" else [])
        + ([f"{said.where}: {said.text}"] if said is not None and len(hosts) < 2 else []),
        [Fix("See which RDMA devices the container has (none listed: pass them in, e.g. docker --device=/dev/infiniband "
             "--ulimit memlock=-1, or the k8s RDMA device plugin)", "ibv_devinfo"),
         Fix("Then confirm NCCL picks them: the log should say NET/IB : Using [0]mlx5_...", "export NCCL_DEBUG=INFO"),
         *_tp_in_node_fix(facts, cfg, nodes)],
        explains=["perf.low_gpu_util", "perf.high_latency"],
    )


def _tp_in_node_fix(facts: Facts, cfg, nodes: int) -> list[Fix]:
    """TP inside a node, PP across nodes: only the pipeline's activations cross the slow link."""
    tp = (cfg.tensor_parallel_size or 1) if cfg else 1
    per_node = len(facts.gpus.gpus) if facts.gpus and facts.gpus.gpus else (tp // nodes if tp >= nodes else 0)
    if per_node < 1 or tp <= per_node:
        return []
    engine = cfg.engine if cfg and cfg.engine else "vllm"
    return [Fix(f"Or keep TP inside a node and split across the {nodes} nodes with PP (far less traffic between nodes)",
                fv.command(engine, ("tp", per_node), ("pp", tp // per_node)))]


def _nccl_env(cfg, g) -> Finding | None:
    if cfg is None:
        return None
    env = cfg.env
    tp = cfg.tensor_parallel_size or 1
    nvlink = any(level_is_nvlink(c) for row in g.topology for c in row) or any((x.nvlink_active or 0) > 0 for x in g.gpus)
    if tp > 1 and nvlink and any(k.lstrip("-").replace("_", "-") == "disable-custom-all-reduce" for k in cfg.extra):
        return Finding("perf.slow_interconnect", f"--disable-custom-all-reduce on NVLink GPUs: TP={tp} uses the slower NCCL all-reduce",
                       ["--disable-custom-all-reduce given", "the GPUs are NVLink-connected (NV# in topo -m / active NVLinks)"],
                       [Fix("Drop --disable-custom-all-reduce: vLLM's custom all-reduce is faster for small messages over NVLink")],
                       explains=["perf.high_latency"])
    if env.get("NCCL_P2P_DISABLE") == "1" and tp > 1:
        note = " although the GPUs have NVLink" if nvlink else ""
        return Finding("perf.slow_interconnect", f"NCCL_P2P_DISABLE=1: TP={tp} all-reduces go through host memory{note}",
                       [f"NCCL_P2P_DISABLE={env['NCCL_P2P_DISABLE']} in the engine's environment"],
                       [Fix("Unset NCCL_P2P_DISABLE (set only as a workaround for broken P2P on some consumer boards)",
                            "unset NCCL_P2P_DISABLE")], explains=["perf.low_gpu_util", "perf.high_latency"])
    if env.get("NCCL_IB_DISABLE") == "1" and (cfg.nnodes or 1) > 1:
        return Finding("perf.slow_interconnect", "NCCL_IB_DISABLE=1 on a multi-node deployment: NCCL falls back to TCP sockets",
                       ["NCCL_IB_DISABLE=1", f"nnodes={cfg.nnodes}"],
                       [Fix("Let NCCL use InfiniBand/RoCE", "unset NCCL_IB_DISABLE")], explains=["perf.high_latency"])
    return None
