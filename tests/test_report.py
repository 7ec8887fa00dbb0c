"""Ranking and the renderers, all from one Report object."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from llm_doctor.engine import CheckResult
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix
from llm_doctor.redact import Redactor
from llm_doctor.report import build_report, rank
from llm_doctor.report.render import FORMATS, render


def f(code: str, severity: str = "", explains: tuple[str, ...] = ()) -> Finding:
    return Finding(code, code, severity=severity, explains=list(explains))


def test_errors_before_warnings_then_layers() -> None:
    ranked = rank([f("perf.low_gpu_util"), f("load.runtime_oom"), f("access.key_rejected"), f("access.timeout", "warn")])
    assert [x.code for x in ranked] == ["access.key_rejected", "load.runtime_oom", "access.timeout", "perf.low_gpu_util"]


def test_root_cause_before_its_symptom() -> None:
    # the cause is a warning and in a later position, yet it explains the error: it goes first
    symptom = f("load.kv_cache_insufficient")
    cause = f("load.gpu_memory_occupied", "warn", explains=("load.kv_cache_insufficient",))
    other = f("access.key_rejected")
    ranked = rank([other, symptom, cause])
    assert [x.code for x in ranked] == ["access.key_rejected", "load.gpu_memory_occupied", "load.kv_cache_insufficient"]


def test_cause_chain_and_cycle_terminate() -> None:
    a = f("load.host_oom", explains=("load.nccl_failed",))
    b = f("load.nccl_failed", explains=("load.host_oom",))  # a cycle must not recurse forever
    assert {x.code for x in rank([a, b])} == {"load.host_oom", "load.nccl_failed"}


def sample_report():
    finding = Finding(
        "access.key_rejected",
        "the server rejected the key sk-secret-value-123456",
        ["HTTP 401 {'error': 'Invalid API key sk-secret-value-123456'}"],
        [Fix("Use the key the server expects", "export OPENAI_API_KEY=sk-secret-value-123456")],
        check="access.auth",
    )
    checks = [
        CheckResult("access.auth", "access", "fail", 1.5, "401", [finding]),
        CheckResult("load.logs", "load", "skip", 0.0, "no logs facts"),
    ]
    return build_report(checks, Facts())


def test_json_contract_fields() -> None:
    out = json.loads(render(sample_report(), "json", Redactor(["sk-secret-value-123456"])))
    assert set(out) == {"schema", "tool", "status", "findings", "checks", "facts"}
    assert out["schema"] == "llm-doctor.report/1"
    assert out["status"] == "error"
    (finding,) = out["findings"]
    assert set(finding) == {"rank", "code", "severity", "layer", "check", "title", "evidence", "fixes"}
    assert finding["rank"] == 1 and finding["layer"] == "access" and finding["check"] == "access.auth"
    assert out["checks"][1] == {"id": "load.logs", "layer": "load", "status": "skip", "duration_ms": 0.0, "detail": "no logs facts"}


def test_every_format_masks_the_key() -> None:
    report = sample_report()
    for fmt in FORMATS:
        text = render(report, fmt, Redactor(["sk-secret-value-123456"]))
        assert "sk-secret-value-123456" not in text, fmt
        assert "sk-...3456" in text, fmt


# The Jenkins/Ant junit-10.xsd (jenkinsci/xunit-plugin): what a testsuite and a testcase may carry.
SUITE_REQUIRED = {"name", "tests", "failures", "errors"}
SUITE_ALLOWED = SUITE_REQUIRED | {"group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url"}
CASE_CHILDREN = {"skipped", "error", "failure", "system-out", "system-err"}
SUREFIRE_TIME = r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?"


def assert_junit_10(root: ET.Element) -> None:
    import re

    assert root.tag == "testsuite"
    assert SUITE_REQUIRED <= set(root.attrib) <= SUITE_ALLOWED, root.attrib
    assert re.fullmatch(SUREFIRE_TIME, root.get("time", ""))
    for case in root:
        assert case.tag == "testcase" and case.get("name")
        assert set(case.attrib) <= {"name", "time", "classname", "group"}
        assert {child.tag for child in case} <= CASE_CHILDREN
    counted = {tag: len(root.findall(f"testcase/{tag}")) for tag in ("failure", "error", "skipped")}
    assert (root.get("failures"), root.get("errors"), root.get("skipped")) == tuple(
        str(counted[t]) for t in ("failure", "error", "skipped")
    )
    assert root.get("tests") == str(len(root.findall("testcase")))


def test_junit_is_valid_against_junit_10_xsd_with_failure_and_skip() -> None:
    root = ET.fromstring(render(sample_report(), "junit", Redactor()))
    assert_junit_10(root)
    assert root.get("tests") == "2" and root.get("failures") == "1" and root.get("skipped") == "1"
    assert root.get("errors") == "0"
    assert root.find("testcase/failure").get("type") == "fail"


def test_junit_honours_fail_on_like_the_exit_code() -> None:
    warn_only = build_report([CheckResult("perf.gpu_util", "perf", "warn", 0, "", [f("perf.low_gpu_util", "warn")])], Facts())
    gated = ET.fromstring(render(warn_only, "junit", Redactor(), fail_on="warn"))
    assert_junit_10(gated)
    assert gated.get("failures") == "1" and warn_only.exit_code("warn") == 1
    assert "perf.low_gpu_util" in gated.find("testcase/failure").text
    passed = ET.fromstring(render(warn_only, "junit", Redactor(), fail_on="error"))
    assert passed.get("failures") == "0" and warn_only.exit_code("error") == 0
    assert "perf.low_gpu_util" in passed.find("testcase/system-out").text
    never = ET.fromstring(render(sample_report(), "junit", Redactor(), fail_on="never"))
    assert never.get("failures") == "0" and never.get("errors") == "0"


def test_junit_a_crashed_check_is_an_error() -> None:
    crashed = build_report([CheckResult("load.x", "load", "error", 0, "check crashed: KeyError: 'x'")], Facts())
    root = ET.fromstring(render(crashed, "junit", Redactor()))
    assert_junit_10(root)
    assert root.get("errors") == "1" and root.get("failures") == "0"
    assert root.find("testcase/error").text == "check crashed: KeyError: 'x'"


def test_exit_codes_follow_fail_on() -> None:
    report = sample_report()
    assert report.exit_code("error") == 1
    assert report.exit_code("never") == 0
    warn_only = build_report([CheckResult("p.x", "perf", "warn", 0, "", [f("perf.low_gpu_util")])], Facts())
    assert warn_only.exit_code("error") == 0
    assert warn_only.exit_code("warn") == 1
    assert warn_only.status == "warn"


def test_text_report_plain_without_color() -> None:
    text = render(sample_report(), "text", Redactor())
    assert "\x1b[" not in text
    assert "1. ERROR access.key_rejected" in text
    assert "export OPENAI_API_KEY=" in text


def test_secrets_the_redactor_knows_only_by_shape_are_masked_before_markup_escapes_them() -> None:
    """HTML and JUnit escape quotes and ampersands (`&quot;api_key&quot;`, `&amp;key=`): redacting
    only the escaped output would miss them, so the report's text is redacted before rendering."""
    evidence = ['{"api_key": "cnry-json-value-1"}', "GET http://h/x?a=1&key=cnry-query-value-2", "['--api_key', 'cnry-argv-value-3']"]
    finding = Finding("access.key_rejected", "t", evidence, [Fix("retry", "curl 'http://h/?a=1&token=cnry-fix-value-4'")], severity="error")
    report = build_report([CheckResult("access.key", "access", "fail", detail='said {"password": "cnry-detail-5"}', findings=[finding])], Facts())
    for fmt in FORMATS:
        out = render(report, fmt, Redactor())
        assert "cnry-" not in out.replace("cnr...", ""), (fmt, out)
