"""Saved nvidia-smi outputs (table, -q, -q -x, nvlink --status) and topo matrices, from real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.collect.files import READERS, head_of, load_paths
from llm_doctor.collect.logs import InputError
from llm_doctor.engine import Deadline
from llm_doctor.logparse import nvidia_smi, topo

SMI = Path(__file__).resolve().parents[1] / "fixtures" / "smi"
TOPO = Path(__file__).resolve().parents[1] / "fixtures" / "topo"


def kind_of(path: Path) -> str | None:
    head = head_of(str(path))
    return next((r.kind for r in READERS if r.sniff(head)), None)


@pytest.mark.parametrize(
    "name, kind",
    [
        ("nvidia-smi-table-8x-h100-sxm-driver565.txt", "nvidia-smi"),
        ("nvidia-smi-table-gtx680-driver470-old-layout.txt", "nvidia-smi"),
        ("nvidia-smi-q-8x-h100-sxm-driver565.txt", "nvidia-smi -q"),
        ("nvidia-smi-q-gtx680-driver470-clocks-throttle-reasons.txt", "nvidia-smi -q"),
        ("nvlink-status-2x-h100-pcie-bridge-some-inactive.txt", "nvidia-smi nvlink"),
    ],
)
def test_recognised_by_content(name, kind, tmp_path):
    renamed = tmp_path / "attachment.log"  # the name says nothing
    renamed.write_bytes((SMI / name).read_bytes())
    assert kind_of(renamed) == kind


def test_topo_recognised_by_content():
    assert kind_of(TOPO / "rtx3090-4x-phb-spaces.txt") == "nvidia-smi topo"
    assert kind_of(TOPO / "l4-2x-p2p-cns.txt") == "nvidia-smi topo"


def test_table_wide_layout_with_processes():
    f = nvidia_smi.parse_table((SMI / "nvidia-smi-table-2x-l4-driver550-ray-workers.txt").read_text().splitlines())
    assert f.driver_version == "550.90.07" and f.cuda_version == "12.4"
    assert [g.name for g in f.gpus] == ["NVIDIA L4", "NVIDIA L4"]
    assert f.gpus[0].memory_used_mib == 20313 and f.gpus[0].memory_total_mib == 23034
    assert f.gpus[0].temperature_c == 76 and f.gpus[0].power_limit_w == 72
    assert [(p.pid, p.name, p.used_mib) for p in f.gpus[1].processes] == [(1082, "ray::RayWorkerWrapper", 0.0)]


def test_table_old_layout_na_values():
    f = nvidia_smi.parse_table((SMI / "nvidia-smi-table-gtx680-driver470-old-layout.txt").read_text().splitlines())
    (g,) = f.gpus
    assert g.name == "NVIDIA GeForce ..." and g.memory_total_mib == 2000
    assert g.power_draw_w is None and g.util_gpu is None


def test_query_full_h100_box():
    f = nvidia_smi.parse_query((SMI / "nvidia-smi-q-8x-h100-sxm-driver565.txt").read_text().splitlines())
    assert f.driver_version == "565.57.01" and len(f.gpus) == 8
    g = f.gpus[7]
    assert g.name == "NVIDIA H100 80GB HBM3" and g.bus_id == "00000000:DB:00.0"
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max) == (5, 5, 16, 16)
    assert g.power_limit_w == 700 and g.sm_clock_max_mhz == 1980 and g.mig_mode == "Disabled"
    assert g.ecc_uncorrected_volatile == 0 and g.throttle_reasons == []


def test_query_old_throttle_block_and_inline_na():
    old = nvidia_smi.parse_query((SMI / "nvidia-smi-q-gtx680-driver470-clocks-throttle-reasons.txt").read_text().splitlines())
    assert old.driver_version == "470.256.02" and old.gpus[0].throttle_reasons == []
    h800 = nvidia_smi.parse_query((SMI / "nvidia-smi-q-i0-h800-driver525-clocks-throttle-reasons.txt").read_text().splitlines())
    assert h800.gpus[0].name == "NVIDIA H800" and h800.gpus[0].throttle_reasons == []  # Idle only


def test_query_active_power_cap_and_pending_remap():
    rtx = nvidia_smi.parse_query((SMI / "nvidia-smi-q-1x-rtx5090-driver570.txt").read_text().splitlines())
    assert rtx.gpus[0].throttle_reasons == ["sw_power_cap"]
    a100 = nvidia_smi.parse_query((SMI / "a100-sxm4-80gb-q-ecc-remapped-rows-excerpt.txt").read_text().splitlines())
    assert a100.gpus[0].remapped_rows_pending is True


def test_xml_query():
    xml = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log><driver_version>550.54.15</driver_version><cuda_version>12.4</cuda_version>
<gpu id="00000000:3B:00.0"><product_name>NVIDIA A100-PCIE-40GB</product_name><uuid>GPU-1</uuid>
<persistence_mode>Enabled</persistence_mode><mig_mode><current_mig>Disabled</current_mig></mig_mode>
<pci><pci_gpu_link_info><pcie_gen><max_link_gen>4</max_link_gen><current_link_gen>4</current_link_gen></pcie_gen>
<link_widths><max_link_width>16x</max_link_width><current_link_width>8x</current_link_width></link_widths></pci_gpu_link_info></pci>
<clocks_event_reasons><clocks_event_reason_gpu_idle>Not Active</clocks_event_reason_gpu_idle>
<clocks_event_reason_hw_thermal_slowdown>Active</clocks_event_reason_hw_thermal_slowdown></clocks_event_reasons>
<fb_memory_usage><total>40960 MiB</total><used>38000 MiB</used><free>2960 MiB</free></fb_memory_usage>
<utilization><gpu_util>97 %</gpu_util><memory_util>60 %</memory_util></utilization>
<temperature><gpu_temp>91 C</gpu_temp></temperature>
<gpu_power_readings><power_draw>249.10 W</power_draw><current_power_limit>250.00 W</current_power_limit><max_power_limit>250.00 W</max_power_limit></gpu_power_readings>
<clocks><sm_clock>1005 MHz</sm_clock></clocks><max_clocks><sm_clock>1410 MHz</sm_clock></max_clocks>
<processes><process_info><pid>4321</pid><type>C</type><process_name>python3</process_name><used_memory>37990 MiB</used_memory></process_info></processes>
</gpu></nvidia_smi_log>"""
    f = nvidia_smi.parse_xml(xml)
    (g,) = f.gpus
    assert f.driver_version == "550.54.15" and g.bus_id == "00000000:3B:00.0"
    assert (g.pcie_width_current, g.pcie_width_max, g.pcie_gen_current) == (8, 16, 4)
    assert g.throttle_reasons == ["hw_thermal_slowdown"]
    assert g.util_gpu.mean == 97 and g.memory_used_mib == 38000
    assert [(p.pid, p.name, p.used_mib) for p in g.processes] == [(4321, "python3", 37990.0)]


def test_nvlink_status_counts_active_links():
    f = nvidia_smi.parse_nvlink_status((SMI / "nvlink-status-2x-h100-pcie-bridge-some-inactive.txt").read_text().splitlines())
    assert [g.nvlink_active for g in f.gpus] == [12, 12]


@pytest.mark.parametrize(
    "name, n, row0",
    [
        ("rtx3090-4x-phb-spaces.txt", 4, ["X", "PHB", "PHB", "PHB"]),
        ("h100-8x-nv18-8nic-mlx5-tabs-missing-tab-artifact.txt", 8, ["X"] + ["NV18"] * 7),
        ("a800-pcie-8x-nv8-bridge-pairs-pxb-bond-nic.txt", 8, ["X", "NV8"] + ["PXB"] * 6),
        ("h800-8x-nv8-4nic-truncated-copy-artifact.txt", 8, ["X"] + ["NV8"] * 7),
        ("v100-sxm2-8x-hybrid-cube-mesh-nv1-nv2.txt", 8, ["X", "NV2", "NV2", "NV1", "NV1", "SYS", "SYS", "SYS"]),
    ],
)
def test_topo_matrix_survives_copy_damage(name, n, row0):
    matrix, p2p, _ = topo.parse((TOPO / name).read_text())
    assert len(matrix) == n and all(len(r) == n for r in matrix) and not p2p
    assert matrix[0] == row0
    assert all(matrix[i][i] == "X" for i in range(n))


def test_topo_fused_cells_row():
    matrix, _, nics = topo.parse((TOPO / "h100-8x-nv18-8nic-mlx5-tabs-missing-tab-artifact.txt").read_text())
    assert matrix[5] == ["NV18"] * 5 + ["X", "NV18", "NV18"]
    assert nics[:2] == ["mlx5_0", "mlx5_1"]


def test_topo_p2p_matrix():
    _, p2p, _ = topo.parse((TOPO / "l4-2x-p2p-cns.txt").read_text())
    assert p2p == [["X", "CNS"], ["CNS", "X"]]


def test_files_combined_into_one_gpu_fact_set():
    facts = load_paths([str(SMI / "nvidia-smi-table-8x-h100-sxm-driver565.txt"), str(SMI / "nvidia-smi-q-8x-h100-sxm-driver565.txt"),
                        str(TOPO / "h100-8x-nv18-8nic-mlx5-tabs-missing-tab-artifact.txt")], Deadline(30))
    g = facts.gpus
    assert len(g.gpus) == 8  # the table's and -q's GPUs matched by bus id, topo's by index
    assert g.gpus[0].pcie_width_max == 16 and g.gpus[0].temperature_c == 30
    assert g.topology[0][1] == "NV18"
    assert set(g.source.split(", ")) == {"nvidia-smi", "nvidia-smi -q", "nvidia-smi topo -m"}


@pytest.mark.parametrize("blob", [b"", b"\x00\xff\xfe" * 5000, b"NVIDIA-SMI 550 Driver Version: 550 Memory-Usage\n| garbage"])
def test_bad_input_is_not_a_traceback(blob, tmp_path):
    p = tmp_path / "x.txt"
    p.write_bytes(blob)
    try:
        facts = load_paths([str(p)], Deadline(10))
    except InputError as exc:  # binary data named on the command line: a usage error naming it
        assert str(p) in str(exc) and blob.startswith(b"\x00")
        return
    assert facts.gpus is None or facts.gpus.gpus == []


def test_q_section_excerpts_without_a_gpu_header():
    ecc = load_paths([str(SMI / "q-ecc-sram-uncorrectable-excerpt.txt")], Deadline(10)).gpus
    assert ecc.gpus[0].ecc_uncorrected_volatile == 1 and ecc.gpus[0].ecc_uncorrected_aggregate == 5
    pages = load_paths([str(SMI / "q-retired-pages-pending-excerpt.txt")], Deadline(10)).gpus
    assert pages.gpus[0].retired_pages_pending is True
    clean = nvidia_smi.parse_query((SMI / "nvidia-smi-q-d-ecc-2x-a100-pcie.txt").read_text().splitlines())
    assert [g.ecc_uncorrected_volatile for g in clean.gpus] == [0, 0]


@pytest.mark.parametrize("order", [("topo", "smi"), ("smi", "topo")])
def test_topo_and_table_of_one_8_gpu_box_count_8_in_either_order(order, tmp_path):
    """The README's `analyze topo.txt smi.txt`: topo -m names GPUs by index, the table by bus id;
    the same box must stay 8 GPUs, not 16 (which proposed --tensor-parallel-size 16)."""
    files = {
        "topo": TOPO / "h100-8x-nv18-8nic-mlx5-tabs-missing-tab-artifact.txt",
        "smi": SMI / "nvidia-smi-table-8x-h100-sxm-driver565.txt",
    }
    facts = load_paths([str(files[k]) for k in order], Deadline(60))
    gpus = facts.gpus.gpus
    assert [g.index for g in gpus] == list(range(8))
    assert all(g.bus_id and g.name for g in gpus)
    assert len(facts.gpus.topology) == 8


def gaps(facts) -> list[tuple[str, str]]:
    """The input gaps (doctor.input_incomplete, status incomplete) a reader recorded."""
    return [(g.source, g.reason) for g in facts.gaps]


def test_a_table_cut_in_the_middle_says_gpus_may_be_missing(tmp_path):
    """The 8x H100 table cut inside GPU 3's block: 4 GPUs read, and a note that the rest may be missing."""
    whole = (SMI / "nvidia-smi-table-8x-h100-sxm-driver565.txt").read_text()
    cut = tmp_path / "smi.txt"
    cut.write_text(whole[: whole.index("|   3  NVIDIA") + 100])  # GPU 3's first row and a bit
    facts = load_paths([str(cut)], Deadline(30))
    assert [g.index for g in facts.gpus.gpus] == [0, 1, 2, 3]
    assert gaps(facts) == [
        (str(cut), "nvidia-smi table: GPU 3: its rows are cut short (no memory figures)"),
        (str(cut), "nvidia-smi table: the table ends after GPU 3 without its Processes section: it is cut, "
                   "and GPUs after GPU 3 may be missing"),
    ]


def test_a_table_with_a_lost_row_names_the_gpu(tmp_path):
    """The 8x H100 table with GPU 6's block lost in the copy: said, not silently 7 GPUs."""
    lines = (SMI / "nvidia-smi-table-8x-h100-sxm-driver565.txt").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("|   6  NVIDIA"))
    damaged = tmp_path / "smi.txt"
    damaged.write_text("\n".join(lines[:at] + lines[at + 4 :]) + "\n")
    facts = load_paths([str(damaged)], Deadline(30))
    assert len(facts.gpus.gpus) == 7
    assert gaps(facts) == [(str(damaged), "nvidia-smi table: GPU 6 has no row in the table (7 rows up to GPU 7): lines "
                                          "were lost in the copy (or it was run for selected GPUs with -i)")]


def test_a_whole_table_has_no_gap_note():
    facts = load_paths([str(SMI / "nvidia-smi-table-2x-l4-driver550-ray-workers.txt")], Deadline(30))
    assert gaps(facts) == [] and len(facts.gpus.gpus) == 2


def test_a_cut_query_output_says_how_many_attached_gpus_are_missing(tmp_path):
    """`nvidia-smi -q` names the attached GPUs up front: a copy cut after 5 GPU blocks says so."""
    lines = (SMI / "nvidia-smi-q-8x-h100-sxm-driver565.txt").read_text().splitlines()
    sixth = [i for i, line in enumerate(lines) if line.startswith("GPU 0000")][5]
    cut = tmp_path / "smi-q.txt"
    cut.write_text("\n".join(lines[:sixth]) + "\n")
    facts = load_paths([str(cut)], Deadline(30))
    assert len(facts.gpus.gpus) == 5
    assert gaps(facts) == [(str(cut), "nvidia-smi -q: 5 of the 8 attached GPUs are in the output: it is cut (or was "
                                      "run for selected GPUs with -i), so GPUs may be missing")]
    assert gaps(load_paths([str(SMI / "nvidia-smi-q-8x-h100-sxm-driver565.txt")], Deadline(30))) == []
