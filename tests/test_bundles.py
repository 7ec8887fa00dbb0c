"""Saved bundles read back by `analyze`: checked against the bundle schema (version, types, size,
depth), a bad one refused with a usage error (exit 2) naming the file and the field, never read
as a log and never a traceback."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from llm_doctor.collect.files import MAX_BUNDLE_DEPTH, BadBundle, read_bundle
from llm_doctor.facts import FACTS_SCHEMA, Facts
from llm_doctor.facts.gpu import Gpu, GpuFacts


def analyze(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llm_doctor", "analyze", *args], capture_output=True, text=True, timeout=120)


def good() -> dict:
    return Facts(gpus=GpuFacts(source="nvml", available=True, gpus=[Gpu(index=0, name="NVIDIA L4")])).to_dict()


def write(tmp_path: Path, data: object, name: str = "bundle.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def test_a_good_bundle_round_trips(tmp_path):
    facts = read_bundle(str(write(tmp_path, good())))
    assert facts.gpus.gpus[0].name == "NVIDIA L4"


def test_a_gzipped_bundle_and_a_json_report_are_read(tmp_path):
    path = tmp_path / "bundle.json.gz"
    path.write_bytes(gzip.compress(json.dumps(good()).encode()))
    assert read_bundle(str(path)).gpus.gpus[0].name == "NVIDIA L4"
    report = {"schema": "llm-doctor.report/1", "findings": [], "checks": [], "facts": good()}
    assert read_bundle(str(write(tmp_path, report, "report.json"))).gpus.gpus[0].name == "NVIDIA L4"


BAD = [
    ("wrong version", {**good(), "schema": "llm-doctor.facts/2"},
     "field schema: 'llm-doctor.facts/2' is not 'llm-doctor.facts/1'"),
    ("wrong type deep inside", {**good(), "gpus": {"gpus": [{"index": "zero"}]}},
     "field gpus.gpus[0].index: expected int, got str 'zero'"),
    ("a bool is not a number", {**good(), "gpus": {"gpus": [{"index": True}]}},
     "field gpus.gpus[0].index: expected int, got bool True"),
    ("a section that is a list", {**good(), "settings": [1, 2]}, "field settings: expected an object, got list"),
    ("notes that are not a list", {**good(), "notes": "x"}, "field notes: expected a list, got str 'x'"),
    ("events that are not objects", {**good(), "logs": {"events": [42]}}, "field logs.events[0]: expected an object, got int 42"),
    ("cut short", f'{{"schema": "{FACTS_SCHEMA}"', "not valid JSON"),
]


@pytest.mark.parametrize(("case", "data", "said"), BAD, ids=[b[0] for b in BAD])
def test_bad_bundle_is_refused_naming_the_field(tmp_path, case, data, said):
    path = write(tmp_path, data)
    with pytest.raises(BadBundle) as err:
        read_bundle(str(path))
    assert str(err.value).startswith(f"{path}: not a readable llm-doctor bundle: ")
    assert said in str(err.value)


def test_half_written_bundle_is_a_usage_error_naming_the_file(tmp_path):
    whole = json.dumps(good(), indent=2)
    path = write(tmp_path, whole[: len(whole) // 2])
    out = analyze(str(path))
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"{path}: not a readable llm-doctor bundle: not valid JSON" in out.stderr
    assert "cut short?" in out.stderr and "Traceback" not in out.stderr
    assert out.stdout == ""  # not read as a log


def test_wrong_schema_is_not_read_as_a_log(tmp_path):
    path = write(tmp_path, {**good(), "schema": "someone-else/3"})
    out = analyze(str(path), "--format", "json")
    assert out.returncode == 2 and "field schema: 'someone-else/3'" in out.stderr


def test_deeply_nested_bundle_is_refused_without_recursion(tmp_path):
    for depth in (MAX_BUNDLE_DEPTH + 5, 100_000):
        deep = f'{{"schema": "{FACTS_SCHEMA}", "notes": ' + "[" * depth + "]" * depth + "}"
        out = analyze(str(write(tmp_path, deep)))
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr and "RecursionError" not in out.stderr
        assert "nested" in out.stderr


def test_oversize_bundle_is_refused_by_its_size(tmp_path, monkeypatch):
    import llm_doctor.collect.files as files

    monkeypatch.setattr(files, "MAX_BUNDLE_BYTES", 1000)
    path = write(tmp_path, {**good(), "notes": ["x" * 2000]})
    with pytest.raises(BadBundle) as err:
        read_bundle(str(path))
    assert "a bundle is at most 1000 bytes" in str(err.value)
