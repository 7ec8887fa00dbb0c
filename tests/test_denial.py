"""A failure term a person denies (doctor/logparse/denial.py) states nothing: "Zero Xid 43/13", "well below thermal
throttle", "Nothing wrong", "Issue resolved." are a healthy run's or a fixed report's words, read by the prose tiers
(failure_prose.py, worded.py) and the event rules; the same terms undenied still state the failure. The sentences are
the words of public threads (each names its thread)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.logparse import failure_prose, worded
from llm_doctor.logparse.denial import denied
from llm_doctor.logparse.failures import line_signal
from tests.analyze_json import analyze

# https://github.com/tonyd2wild/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark/pull/5: a tuning result, all ranks stable
ZERO_XID = "- Zero Xid 43/13, no EngineDead, all 4 ranks stable."
# the kernel's own line (NVIDIA driver, nv_report_error: "NVRM: Xid (PCI:%04x:%02x:%02x): %d, ...")
KERNEL_XID = "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."


@pytest.mark.parametrize(("sentence", "term", "want"), [
    (ZERO_XID, "Xid", True),
    ("| GPU temp | 70–76 °C | Air-cooled, well below thermal throttle (80°C) |", "thermal", True),
    ("Doubling fits inside the envelope; survives C6 concurrent prefills with zero OOM.", "OOM", True),
    ("The GPU is not throttled at all.", "throttled", True),
    ("It ran for a week without any crash.", "crash", True),
    # a success's verb denied is the failure itself
    ("The container does not resolve api.openai.com.", "resolve", False),
    ("32 attention heads are not divisible by 5 GPUs.", "divisible", False),
    ("The server no longer responds after an hour.", "responds", False),
    ("We hit Xid 79 on GPU 3.", "Xid", False),
])
def test_a_term_is_denied_only_by_the_words_just_before_it(sentence: str, term: str, want: bool) -> None:
    assert denied(sentence, sentence.index(term), term) is want


def test_an_xid_said_not_to_happen_is_no_gpu_fault_and_blocks_no_perf_check(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("## Measured result\n\n- **+22% decode** (26.7 -> 32.5 tok/s, median of 5).\n" + ZERO_XID + "\n")
    codes = [f["code"] for f in analyze(path)["findings"]]
    assert "load.gpu_fault" not in codes
    assert [s.code for s in failure_prose.statements("notes.txt", ZERO_XID)] == []


def test_the_kernels_xid_line_is_still_a_gpu_fault(tmp_path: Path) -> None:
    path = tmp_path / "dmesg.txt"
    path.write_text(KERNEL_XID + "\n")
    assert analyze(path)["findings"][0]["code"] == "load.gpu_fault"
    assert [s.code for s in failure_prose.statements("x", "After an hour we got Xid 79 and the engine died.")] == ["load.gpu_fault"]


def test_a_healthy_benchmark_note_that_says_nothing_is_wrong_guesses_nothing() -> None:
    # https://github.com/noonghunna/club-3090/issues/52 (maintainer's answer)
    text = ("Your test was **single-stream** (5 sequential measured runs), which is a different regime. "
            "Nothing wrong; you're benching the right thing, the right way.\n"
            "| GPU temp | 70–76 °C | Air-cooled, well below thermal throttle (80°C) |\n")
    assert worded.guesses("notes.txt", text) == []


def test_an_issue_resolved_is_no_dns_failure_and_the_cuda_version_refused_is_the_guess() -> None:
    # https://github.com/janhq/cortex.cpp/issues/1019: cortex.cpp's refusal of a TensorRT-LLM engine, then the fix
    text = ("1. Have an outdated cuda toolkit and nvidia driver\n2. Get error message:\n```\n"
            "× CUDA version 12.3 is not compatible with TensorRT-LLM models. Required version: 12.4\n```\n"
            "3.Install latest cuda toolkit\n4. Get the same message\n6. Issue resolved.\n")
    guesses = worded.guesses("issue.md", text)
    assert [g.code for g in guesses] == ["load.cuda_mismatch"]
    assert guesses[0].words == ["CUDA version", "cuda toolkit"]
    # "resolve" said of a host still counts for the lookup
    assert worded.guesses("x", "The request fails: the container cannot resolve the host name.")[0].code == "access.dns_failed"


def test_a_requirement_and_what_happens_without_it_is_no_failure_seen() -> None:
    # https://github.com/ollama/ollama/issues/2038 (a comment's advice)
    advice = "You'll need a model smaller than 2GB or it won't load all the layers into the GPU."
    assert line_signal(advice, "") is None
    assert line_signal("The model won't load on my 1050 since the upgrade.", "") is not None
