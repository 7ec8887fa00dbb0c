"""A fix's command is a real command a person can paste: the value computed from the facts, or a
command that finds it out. Never a `<placeholder>` that looks like a command (pasted, `<` and `>`
are shell redirections)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.facts import Facts
from llm_doctor.facts.gpu import Gpu, GpuFacts, GpuProcess
from llm_doctor.findings import Finding

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = re.compile(r"<[A-Za-z][^<>]*>| \.\.\.$")  # `<value>`, or `...` for the rest of a command


def findings(paths: list[str], facts: Facts | None = None) -> list[Finding]:
    loaded = load_paths(paths, Deadline(60).reserving())
    if facts is not None and facts.gpus is not None:
        loaded.gpus = facts.gpus
    return [f for r in run_checks(loaded, select(load_checks()), Deadline(60)) for f in r.findings]


def test_no_fix_over_the_corpus_has_a_placeholder_command() -> None:
    files = sorted(p for p in (ROOT / "fixtures").rglob("*") if p.is_file() and not p.name.endswith(".source.txt"))
    assert len(files) > 100
    seen, bad = 0, []
    for path in files:
        for f in findings([str(path)]):
            for fix in f.fixes:
                seen += 1
                if fix.command and PLACEHOLDER.search(fix.command):
                    bad.append((path.name, f.code, fix.command))
    assert seen > 100  # the corpus really produced fixes
    assert bad == []


def test_no_fix_literal_in_the_source_has_a_placeholder_command() -> None:
    """The access checks need a live server to fire; their commands are checked in the source:
    the second argument of every Fix(...) call, literal parts of f-strings included."""
    bad = []
    for path in sorted([*(ROOT / "checks").rglob("*.py"), *(ROOT / "doctor").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Fix" and len(node.args) > 1:
                literal = "".join(
                    n.value for n in ast.walk(node.args[1]) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                )
                if PLACEHOLDER.search(literal):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {literal}")
    assert bad == []


def commands(found: list[Finding], code: str) -> list[str | None]:
    return [x.command for f in found if f.code == code for x in f.fixes]


def test_a_free_gpu_from_nvml_is_the_value_to_move_to() -> None:
    """vLLM stopped because another process held GPU memory; NVML shows GPU 1 with no process."""
    gpus = GpuFacts(source="nvml", available=True, gpus=[
        Gpu(index=0, memory_total_mib=49140, memory_free_mib=32200, processes=[GpuProcess(pid=4242, used_mib=16000)]),
        Gpu(index=1, memory_total_mib=49140, memory_free_mib=48600),
        Gpu(index=2, memory_total_mib=49140, memory_free_mib=20000, processes=[GpuProcess(pid=77, used_mib=28000)]),
    ])  # fmt: skip
    log = str(ROOT / "fixtures/logs/vllm-0.9.1-tp2-free-memory-below-utilization.log")
    assert "CUDA_VISIBLE_DEVICES=1" in commands(findings([log], Facts(gpus=gpus)), "load.gpu_memory_occupied")
    # without GPU facts: the command that lists the GPUs' memory, not a placeholder
    assert "nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv" in commands(findings([log]), "load.gpu_memory_occupied")


def test_the_gpu_to_reset_is_the_one_with_uncorrected_ecc_errors() -> None:
    gpus = GpuFacts(source="nvml", available=True, gpus=[Gpu(index=0), Gpu(index=3, ecc_uncorrected_volatile=2)])
    log = str(ROOT / "fixtures/logs/sglang-tp8-ecc-error.log")
    assert "nvidia-smi -r -i 3" in commands(findings([log], Facts(gpus=gpus)), "load.gpu_fault")
    reset = [x for f in findings([log]) if f.code == "load.gpu_fault" for x in f.fixes if "reset" in x.summary]
    assert reset and reset[0].command is None and "nvidia-smi -r -i" in reset[0].summary


def test_an_xid_line_names_the_bus_id_to_reset() -> None:
    log = str(ROOT / "fixtures/logs/dmesg-xid-79-fallen-off-bus-with-nvswitch-sxid-gpud.log")  # real dmesg, source in the sidecar
    assert "nvidia-smi -r -i 0000:91:00.0" in commands(findings([log]), "load.gpu_fault")
