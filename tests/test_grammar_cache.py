"""The grammar's derived facts kept on disk (doctor.logparse.grammar_cache) change nothing but speed.

Every value read back from the cache file is the value computed afresh; `analyze` gives the same
report with no cache file, with the file it wrote, and with a corrupt one; a catalogue template's
regex compiled at its first search (catalogue.LazyPattern) is the regex compiled at load.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_doctor.logparse import catalogue as cat
from llm_doctor.logparse import events as ev
from llm_doctor.logparse import prefilter as pf
from llm_doctor.logparse import scan
from llm_doctor.logparse import template_cache as tc

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "fixtures" / "logs" / "sglang-a10g-prefill-oom.log"


def test_every_kept_value_is_the_value_computed_afresh() -> None:
    for p in scan.GRAMMAR:
        assert pf.factors(p) == pf._factors.__wrapped__(p.pattern, p.flags), p.pattern
        assert tc.digit_blind(p) == tc._digit_blind.__wrapped__(p.pattern, p.flags), p.pattern
        assert tc._local(p) == tc._no_lookaround_in.__wrapped__(p.pattern, p.flags), p.pattern


def test_the_catalogue_read_back_is_the_catalogue_checked() -> None:
    files = [(path.name, path.read_text(encoding="utf-8")) for path in sorted(cat.DATA_DIR.glob("*.jsonl"))]
    assert cat.load(ev.KINDS) == cat._parse(files, ev.KINDS)


def test_a_catalogue_error_is_raised_every_time_never_kept(tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "cuda_oom"}\n', encoding="utf-8")
    for _ in range(2):
        with pytest.raises(cat.CatalogueError, match="bad.jsonl:1: missing"):
            cat.load(ev.KINDS, [bad])


def test_a_lazy_template_is_the_compiled_template() -> None:
    for rule in ev.CATALOGUE_RULES[:50]:
        compiled = re.compile(rule.pattern.pattern, re.I)
        assert rule.pattern.flags == compiled.flags
        entry = next(e for e in cat.load(ev.KINDS) if e.regex == rule.pattern.pattern)
        assert rule.pattern.search(entry.sample).groupdict() == compiled.search(entry.sample).groupdict()
        assert rule.pattern.groupindex == compiled.groupindex



def test_a_lazy_hand_rule_is_the_rule_compiled_with_its_flags() -> None:
    text = "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity; 1.00 GiB already allocated; 0 bytes free"
    for rule in ev.HAND_RULES:
        compiled = re.compile(rule.pattern.pattern, rule.pattern.flags & ~re.U)
        assert rule.pattern.flags == compiled.flags, rule.pattern.pattern
        assert rule.pattern.groupindex == compiled.groupindex
        found, expected = rule.pattern.search(text), compiled.search(text)
        assert (found and found.groupdict()) == (expected and expected.groupdict())
    assert any(rule.pattern.search(text) for rule in ev.HAND_RULES)

def _report(cache: Path) -> dict:
    env = {**os.environ, "LLM_DOCTOR_CACHE": str(cache), "NO_COLOR": "1"}
    out = subprocess.run([str(Path(sys.executable).with_name("llm-doctor")), "analyze", str(LOG), "--format", "json", "--fail-on", "never"],
                         capture_output=True, text=True, env=env, timeout=240, check=True).stdout
    doc = json.loads(out)
    return {"findings": doc["findings"], "logs": doc["facts"]["logs"], "deployment": doc["facts"]["deployment"]}


def test_analyze_is_the_same_with_no_cache_its_own_and_a_corrupt_one(tmp_path) -> None:
    first = _report(tmp_path)
    (kept,) = (tmp_path / "grammar").glob("*.marshal")
    assert kept.stat().st_size > 0
    assert _report(tmp_path) == first
    kept.write_bytes(b"\x00not marshal" * 10)
    assert _report(tmp_path) == first
    assert first["findings"][0]["code"]  # the fixture's crash was diagnosed, not an empty report compared to itself


def test_writing_the_cache_removes_other_versions_files_gone_stale(tmp_path) -> None:
    grammar = tmp_path / "grammar"
    grammar.mkdir()
    stale, recent = grammar / "0123456789abcdef0123.marshal", grammar / "fedcba9876543210fedc.marshal"
    for old in (stale, recent):
        old.write_bytes(b"\x00")
    week_ago = os.path.getmtime(recent) - 8 * 24 * 3600
    os.utime(stale, (week_ago, week_ago))
    _report(tmp_path)
    files = sorted(p.name for p in grammar.glob("*.marshal"))
    assert stale.name not in files and recent.name in files and len(files) == 2  # this version's own file and the recent one


def test_an_edited_catalogue_replaces_its_older_version_in_the_file(tmp_path) -> None:
    """catalogue.load is kept by the catalogue files' hash, ~0.5 MB a version: each edit under one code
    version added one, and every run read them all back (19 versions, 9 MB, +30 MB of RSS measured).
    Only the version in use stays; the grammar's per-pattern values stay whatever the catalogue."""
    import marshal

    first = _report(tmp_path)
    (kept,) = (tmp_path / "grammar").glob("*.marshal")
    values = marshal.loads(kept.read_bytes())
    (current,) = [k for k in values if k[0] == "catalogue.load"]
    older = ("catalogue.load", "0" * 64)  # the hash of a catalogue edited since
    values[older] = values[current]
    kept.write_bytes(marshal.dumps(values))
    assert _report(tmp_path) == first
    after = marshal.loads(kept.read_bytes())
    assert older not in after and current in after
    assert {k for k in after if k[0] != "catalogue.load"} == {k for k in values if k[0] != "catalogue.load"}
