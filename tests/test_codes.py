"""The code catalogue is a public contract: doctor/codes.py and docs/codes.md must agree."""

from __future__ import annotations

import re

import pytest

from llm_doctor.codes import CODES, info
from llm_doctor.engine import load_checks
from tests.conftest import ROOT


def documented_codes() -> set[str]:
    text = (ROOT / "docs" / "codes.md").read_text()
    return set(re.findall(r"^\| ((?:access|load|cluster|perf|gate|baseline|doctor)\.\w+) \|", text, re.M))


def test_catalogue_matches_docs() -> None:
    assert set(CODES) == documented_codes()
    assert len(CODES) == 72


def test_unknown_code_raises() -> None:
    with pytest.raises(KeyError, match="unknown finding code"):
        info("access.nonsense")


def test_every_declared_code_is_known() -> None:
    for spec in load_checks().values():
        for code in spec.codes:
            assert code in CODES, (spec.id, code)
