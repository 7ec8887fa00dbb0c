"""nccl-tests runs pasted into a thread (doctor/logparse/nccl_tests.py) judged by perf.interconnect: the bus
bandwidth at the large sizes against the NVLink the GPUs have, and between nodes against what RDMA carries.

The runs are printed with nccl-tests' own format strings (NVIDIA/nccl-tests@a0b82b2 src/util.cu: the rank
lines, the header, `%12li  %12li  %8s  %6s  %6s` then `  %7s  %6.2f  %6.2f  %6s` out of place and in place,
the `Avg bus bandwidth` footer; cbe7f65 (2019) src/all_reduce.cu and common.cu for the older columns).
"""

# ruff: noqa: UP031  (the samples are printed with nccl-tests' own printf formats, kept as the source writes them)
from __future__ import annotations

from pathlib import Path

from llm_doctor.logparse import nccl_tests
from tests.analyze_json import analyze, check


def _run(gpu: str, hosts: list[str], per_host: int, rows: list[tuple[int, str, float, float]]) -> str:
    out = ["# nThread 1 nGpus %d minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
           "validation: 1 graph: 0" % per_host, "#", "# Using devices"]
    rank = 0
    for host in hosts:
        for dev in range(per_host):
            out.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s" % (rank, 0, 4242 + rank, host, dev, 0, 0x18 + dev * 16, 0, gpu))
            rank += 1
    out.append("#")
    out.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % ("", "", "", "", ""))
    out.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s " % (
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"))
    out.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s " % (
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
    for size, time, algbw, busbw in rows:
        out.append("%12li  %12li  %8s  %6s  %6s" % (size, size // 4, "float", "sum", "-1") + "  %7s  %6.2f  %6.2f  %6s" % (time, algbw, busbw, "0") * 2)
    out += ["# %-20s : %d %s" % ("Out of bounds values", 0, "OK"), "# %-20s : %g %s" % ("Avg bus bandwidth", 9.87, ""), "#",
            "# Collective test concluded: all_reduce_perf", ""]
    return "\n".join(out)


def _paste(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "nccl-tests.txt"
    path.write_text(text)
    return analyze(path)


H100 = "NVIDIA H100 80GB HBM3"
SLOW_ROWS = [(8, "30.12", 0.0, 0.0), (33554432, "2789.1", 12.03, 21.05), (1073741824, "87012", 12.34, 21.60), (8589934592, "695021", 12.36, 21.63)]


def test_nvlink_gpus_far_below_their_nvlink_are_slow_interconnect(tmp_path):
    report = _paste(tmp_path, _run(H100, ["node-a"], 8, SLOW_ROWS))
    (f,) = [f for f in report["findings"] if f["code"] == "perf.slow_interconnect"]
    assert f["severity"] == "warn" and f["title"] == "NCCL reaches 21.63 GB/s between 8 NVLink GPUs: the traffic is not on NVLink"
    assert f["evidence"][0].endswith("nccl-tests.txt:19: 8589934592    2147483648     float     sum      -1   695021   12.36   21.63       0   695021   12.36   21.63       0 (all_reduce_perf, out-of-place busbw 21.63 GB/s)")
    assert "NVIDIA H100 80GB HBM3 has 450 GB/s of NVLink per GPU: 5% of it reached" in f["evidence"][2]
    assert [x["command"] for x in f["fixes"]] == ["nvidia-smi nvlink --status; nvidia-smi topo -m; systemctl status nvidia-fabricmanager"]
    assert report["status"] != "incomplete"


def test_a_healthy_nvlink_run_small_sizes_and_pcie_cards_stay_quiet(tmp_path):
    fast = [(8, "30.12", 0.0, 0.0), (1073741824, "5030.2", 213.46, 373.56), (8589934592, "39421", 217.90, 381.33)]
    report = _paste(tmp_path, _run(H100, ["node-a"], 8, fast))
    assert not [f for f in report["findings"] if f["code"].startswith("perf.")]
    assert check(report, "perf.interconnect")["detail"] == "nccl-tests busbw 381.33 GB/s: not below the NVLink or network floor"
    # only sizes below 32 MiB: latency, not bandwidth
    small = _paste(tmp_path, _run(H100, ["node-a"], 8, [(8, "30.12", 0.0, 0.0), (1048576, "40.1", 26.1, 45.7)]))
    assert not [f for f in small["findings"] if f["code"].startswith("perf.")]
    # a PCIe card: PCIe gives no floor to judge 21 GB/s by
    pcie = _paste(tmp_path, _run("NVIDIA H100 PCIe", ["node-a"], 4, SLOW_ROWS))
    assert not [f for f in pcie["findings"] if f["code"].startswith("perf.")]


def test_between_nodes_at_sockets_speed_is_slow_interconnect_with_the_rerun_that_shows_the_transport(tmp_path):
    rows = [(8, "60.12", 0.0, 0.0), (33554432, "27891", 1.20, 2.26), (1073741824, "890123", 1.21, 2.26)]
    report = _paste(tmp_path, _run("NVIDIA A100-SXM4-80GB", ["node-a", "node-b"], 8, rows))
    (f,) = [f for f in report["findings"] if f["code"] == "perf.slow_interconnect"]
    assert f["title"] == "NCCL moves 2.26 GB/s between 2 nodes: the traffic takes TCP sockets"
    assert "over 16 GPUs on 2 host(s)" in f["evidence"][1]
    assert [x["command"] for x in f["fixes"]] == ["NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET mpirun -np 2 -N 1 all_reduce_perf -b 8 -e 8G -f 2 -g 8"]


def test_the_2019_columns_are_read_by_the_headers_names():
    # cbe7f65 src/all_reduce.cu print_header / print_line_header, common.cu "  %7s  %6.2f  %6.2f  %5.0le" and the rank line
    text = "\n".join([
        "# Using devices",
        "#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s" % (0, 101, "gpu-node", 0, 0x1a, "Tesla V100-SXM2-32GB"),
        "#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s" % (1, 101, "gpu-node", 1, 0x1b, "Tesla V100-SXM2-32GB"),
        "# %10s  %12s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % (
            "size", "count", "type", "redop", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error"),
        "%12li  %12li  %6s  %6s" % (67108864, 16777216, "float", "sum") + "  %7s  %6.2f  %6.2f  %5.0le" % ("4987.2", 13.46, 13.46, 0.0) * 2,
        "# Avg bus bandwidth    : %g %s" % (6.1, ""),
    ])
    run = nccl_tests.parse("bench.txt", text)
    assert run is not None and run.gpus == ["Tesla V100-SXM2-32GB"] * 2 and run.hosts == ["gpu-node"]
    assert (run.peak_busbw, run.peak_size, run.avg_busbw) == (13.46, 67108864, 6.1)
    assert run.peak_line.startswith("bench.txt:5: 67108864")
