"""The HTML report as a person sees it: rendered by headless Chromium (Debian's `chromium`
package; .ci/run installs it), checked in the DOM the browser built, and saved as a screenshot.

Real inputs: a corpus log whose KV cache is too small, a `nvidia-smi topo -m` matrix from a real
A800 box, a plan whose budget bars are computed, a Ray cluster bundle with one odd node, and
`run` reading 8 GPUs through nvidia-ml-py from the fake libnvidia-ml (tests/nvml).
Chromium re-serialises the page (double-quoted attributes), so what the asserts find is what the
browser parsed, not the file's text. Skipped only when chromium is absent and
LLM_DOCTOR_REQUIRE_PEERS is unset (CI sets it, so CI must have chromium)."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from llm_doctor.facts import Facts
from llm_doctor.facts.cluster import ClusterFacts, NodeFacts
from llm_doctor.facts.gpu import Gpu, GpuFacts
from llm_doctor.facts.host import HostFacts

ROOT = Path(__file__).resolve().parents[1]
KV_LOG = ROOT / "fixtures/logs/vllm-v1-kv-cache-needed-gib.log"
TOPO = ROOT / "fixtures/topo/a800-pcie-8x-nv8-bridge-pairs-pxb-bond-nic.txt"  # real/topo, source in the sidecar
WIDTH = 1280


@pytest.fixture
def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        why = "chromium is not installed (apt-get install -y --no-install-recommends chromium)"
        if os.environ.get("LLM_DOCTOR_REQUIRE_PEERS"):
            pytest.fail(f"LLM_DOCTOR_REQUIRE_PEERS is set but {why}", pytrace=False)
        pytest.skip(why)
    return found


def report(tmp_path: Path, *argv: str, env: dict[str, str] | None = None) -> Path:
    page = tmp_path / "report.html"
    out = subprocess.run([sys.executable, "-m", "llm_doctor", *argv, "--format", "html", "-o", str(page)],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})  # fmt: skip
    assert out.returncode in (0, 1), out.stderr
    return page


def browse(chromium: str, page: Path, tmp_path: Path) -> str:
    """The DOM Chromium built from the page; a screenshot of it is left next to it."""
    shot = tmp_path / "report.png"
    out = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={WIDTH},1800", "--dump-dom",
         f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">I", png[16:20])[0] == WIDTH  # IHDR width
    return out.stdout


def section(dom: str, heading: str) -> str:
    """The DOM from an <h2> that starts with `heading` up to the next <h2>."""
    start = dom.index(f"<h2>{heading}")
    end = dom.find("<h2>", start + 4)
    return dom[start:end if end > 0 else None]


def test_a_kv_cache_failure_with_its_fixes_and_the_gpu_topology_matrix(chromium: str, tmp_path: Path) -> None:
    dom = browse(chromium, report(tmp_path, "analyze", str(KV_LOG), str(TOPO)), tmp_path)
    assert '<span class="badge big error">error</span>' in dom
    finding = section(dom, "Findings, fix in this order")
    assert '<code>load.kv_cache_insufficient</code>' in finding
    assert '<code>--max-model-len 5088</code><button class="copy" type="button">Copy</button>' in finding
    assert "2.63 GiB KV cache is needed" in finding  # the evidence line from the log
    topo = section(dom, "GPU topology")
    cells = re.findall(r'<td class="(lk-[a-z]+)">([^<]*)</td>', topo)
    assert len(cells) == 64  # 8 x 8
    assert cells.count(("lk-nv", "NV8")) == 8 and cells.count(("lk-self", "X")) == 8
    assert cells[1] == ("lk-nv", "NV8") and cells[2] == ("lk-pix", "PXB")  # GPU0-GPU1 bridged, GPU0-GPU2 over PCIe
    assert "NICs: mlx5_bond_0" in topo
    assert 'class="st-fail"><td><code>load.kv_cache</code>' in section(dom, "Checks")
    assert "<script src" not in dom and "<link" not in dom and "<img" not in dom  # self-contained


def test_a_plan_draws_one_budget_bar_per_gpu(chromium: str, tmp_path: Path) -> None:
    page = report(tmp_path, "plan", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100", "--gpus", "4", "--tp", "4",
                  "--max-model-len", "131072", "--offline")  # fmt: skip
    budget = section(browse(chromium, page, tmp_path), "Memory budget per GPU")
    bars = re.findall(r'<div class="bar">(.*?)</div>', budget)
    assert len(bars) == 4
    for bar in bars:
        widths = [float(w) for w in re.findall(r"width: ?([\d.]+)%", bar)]
        assert len(widths) == 4 and sum(widths) == pytest.approx(100, abs=0.05)  # weights, activations, KV cache, headroom
    assert re.search(r"weights \d+\.\d\d GiB", budget) and re.search(r"KV cache \d+\.\d\d GiB", budget)
    assert "fits: <b>yes</b>" in budget


def test_the_cluster_table_highlights_the_odd_node(chromium: str, tmp_path: Path) -> None:
    def node(n: str, vllm: str, shm: float) -> NodeFacts:
        return NodeFacts(node_id=n * 8, ip=f"10.0.0.{n}", hostname=f"gpu-{n}", resources={"GPU": 8.0},
                         host=HostFacts(cpu_count=64, shm_total_mib=shm),
                         gpus=GpuFacts(source="nvml", available=True, driver_version="550.90.07",
                                       gpus=[Gpu(index=i, name="NVIDIA H100 80GB HBM3") for i in range(8)]),
                         versions={"python": "3.11.9", "ray": "2.40.0", "vllm": vllm, "torch": "2.7.1"})  # fmt: skip

    nodes = [node("1", "0.10.1", 16384.0), node("2", "0.10.1", 16384.0), node("3", "0.9.2", 64.0)]
    bundle = tmp_path / "bundle.json"
    bundle.write_text(json.dumps(Facts(cluster=ClusterFacts(address="10.0.0.1:6379", nodes={n.node_id: n for n in nodes})).to_dict()))
    table = section(browse(chromium, report(tmp_path, "analyze", str(bundle)), tmp_path), "Ray cluster")
    rows = re.findall(r"<tr>(.*?)</tr>", table)[1:]
    assert len(rows) == 3
    odd = [re.findall(r'<td class="odd" title="differs from most nodes">([^<]*)</td>', row) for row in rows]
    assert odd == [[], [], ["0.9.2", "64"]]


def test_run_draws_the_live_gpus_topology_and_memory_in_use(chromium: str, tmp_path: Path) -> None:
    from tests.nvml import build

    lib = build.compile_fake(tmp_path / "nvml")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_NVML_")}
    env.update(LD_LIBRARY_PATH=str(lib.parent), FAKE_NVML_GPUS="8", FAKE_NVML_NVLINKS="18", FAKE_NVML_UTIL="85")
    dom = browse(chromium, report(tmp_path, "run", "--only", "load,perf", "--sample", "0.3", env=env), tmp_path)
    assert "<dt>GPUs</dt><dd>8 GPU(s) NVIDIA H100 80GB HBM3 via nvml, driver 550.90.07</dd>" in dom
    cells = re.findall(r'<td class="(lk-[a-z]+)">([^<]*)</td>', section(dom, "GPU topology"))
    assert len(cells) == 64 and cells.count(("lk-nv", "NV18")) == 56  # NVSwitch: every pair over 18 links
    assert section(dom, "GPU memory in use (nvml)").count('<div class="bar">') == 8


CLICK = ("<script>setTimeout(function(){var b=document.querySelector('button.copy');"
         "Object.defineProperty(navigator,'clipboard',{value:undefined});"
         "new MutationObserver(function(){if(b.textContent==='Copied'){document.title='after click: Copied'}})"
         ".observe(b,{childList:true,characterData:true,subtree:true});b.click()},100)</script></body>")  # fmt: skip


def test_a_copy_button_copies_without_a_script_error(chromium: str, tmp_path: Path) -> None:
    """The page with a click on the first copy button added; virtual time lets the timers run
    however busy the machine is. The async clipboard of headless Chromium answers a script's click
    in its own time (a round trip outside virtual time: under load, after the page was dumped), so
    the test takes it away and exercises the selection fallback, which answers at once."""
    page = report(tmp_path, "analyze", str(KV_LOG))
    clicked = tmp_path / "clicked.html"
    clicked.write_text(page.read_text().replace("</body>", CLICK))
    out = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--enable-logging=stderr",
         "--dump-dom", clicked.as_uri()],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "<title>after click: Copied</title>" in out.stdout
    assert "Uncaught" not in out.stderr
