"""What `llm-doctor analyze` finds in one log, for the tests that judge a log end to end: the same path
as the CLI (collect -> checks -> ranked report), in-process. One place, so every wording test asks the
same question the same way."""

from __future__ import annotations

from pathlib import Path

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.findings import Finding
from llm_doctor.report import build_report


def findings_of(path: Path) -> list[Finding]:
    """The report's findings on the file, ranked."""
    facts = load_paths([str(path)], Deadline(30))
    return build_report(run_checks(facts, select(load_checks()), Deadline(30)), facts).findings


def written(tmp_path: Path, text: str) -> Path:
    """`text` as a log file under tmp_path."""
    path = tmp_path / "client.log"
    path.write_text(text)
    return path


def assert_rank_one(tmp_path: Path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    """The log's rank-1 finding is `code`, quotes `evidence`, and its first fix is `command` (when given)."""
    log = tmp_path / f"{name}.log"
    log.write_text("\n".join(lines) + "\n")
    findings = findings_of(log)
    top = findings[0]
    assert top.code == code, [f.code for f in findings]
    assert any(evidence in line for line in top.evidence), top.evidence
    if command is not None:
        assert top.fixes[0].command == command, [f.command for f in top.fixes]


def scenario(tmp_path: Path, **files: str) -> list[Finding]:
    """The ranked findings of the files analysed together (name -> text; `_` in a name stands for `.`)."""
    paths = []
    for name, text in files.items():
        path = tmp_path / name.replace("_", ".")
        path.write_text(text)
        paths.append(str(path))
    facts = load_paths(paths, Deadline(30))
    return build_report(run_checks(facts, select(load_checks()), Deadline(30)), facts).findings


def codes(found: list[Finding]) -> list[str]:
    return [f.code for f in found]


def only(found: list[Finding], code: str) -> Finding:
    (f,) = [f for f in found if f.code == code]
    return f
