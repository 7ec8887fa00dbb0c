"""Failures stated in people's words, collected from public threads (tests/data/stated_l.jsonl: titles and
one-sentence descriptions of each code's failure, from many engines, clients and languages, none of them a
corpus case's source). Each stated failure maps to its code through doctor/logparse/failure_prose.py;
questions, wishes, advice and the titles of changes stay quiet. A row with a `miss` is a sentence the prose
tier does not read, kept with the reason as the record of what it still misses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_doctor.logparse import failure_prose
from tests.analyze_json import analyze

DATA = Path(__file__).parent / "data" / "stated_l.jsonl"
ROWS = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


def _case(row: dict) -> object:
    marks = [pytest.mark.xfail(reason=row["miss"], strict=True)] if "miss" in row else []
    return pytest.param(row["code"], row["sentence"], id=f"{row['code'] or 'quiet'}:{row['sentence'][:40]}", marks=marks)


def test_the_data_names_real_threads_and_known_codes():
    from llm_doctor.checks.load.stated import ABOUT

    assert len(ROWS) >= 60
    for row in ROWS:
        assert row["source"].startswith("https://") and row["sentence"].strip()
        assert row["code"] is None or row["code"] in ABOUT


@pytest.mark.parametrize(("code", "sentence"), [_case(r) for r in ROWS if r["code"]])
def test_a_stated_failure_maps_to_its_code(code, sentence):
    said = failure_prose.statements("issue.md", sentence + "\n")
    assert [s.code for s in said][:1] == [code]


@pytest.mark.parametrize(("code", "sentence"), [_case(r) for r in ROWS if r["code"] is None])
def test_questions_wishes_advice_and_changes_stay_quiet(code, sentence):
    assert failure_prose.statements("issue.md", sentence + "\n") == []


@pytest.mark.parametrize(("code", "sentence"), [
    # https://github.com/ollama/ollama/issues/3024 (title)
    ("load.gpu_not_visible", "Ollama not using GPU, falling back to CPU"),
    # https://github.com/vllm-project/vllm/issues/129: the two CUDA builds named
    ("load.cuda_mismatch", "The reason is PyTorch installed by `pip` is built with CUDA 11.7 while the container uses CUDA 12.1."),
    # https://github.com/josStorer/RWKV-Runner/issues/185 (title): the OOM killer, in Chinese
    ("load.host_oom", "OOM异常，自动kill程序了"),
    # https://github.com/vllm-project/vllm/issues/6370 (title): a version's dots inside the sentence, a start on two GPUs that hangs
    ("load.nccl_failed", "[Bug]: vLLM 0.5.1 tensor parallel 2 hang"),
    # https://github.com/OpenBMB/MiniCPM-V/issues/451 (title)
    ("access.model_not_found", "[BUG] 使用官方vllm API方式运行找不到名字"),
])
def test_a_thread_text_alone_ranks_the_stated_code_first(tmp_path, code, sentence):
    path = tmp_path / "issue.md"
    path.write_text(sentence + "\n")
    first = analyze(path)["findings"][0]
    assert first["code"] == code and first["tier"] == "statement"
    assert first["evidence"][0].endswith(f"issue.md:1: {sentence}")


def test_a_number_dot_and_a_script_edge_are_no_boundaries():
    # "12.0)" does not end the sentence before "mismatch"; "OOM" against Chinese still is a word
    assert failure_prose._probe("CUDA version (12.0) mismatch") == "CUDA version (12·0) mismatch"
    assert failure_prose._probe("OOM异常") == "OOM 异常"
