"""bench/accuracy.py's reading of a miss: a ranking fault, a recognition gap, or a misreading.

The held-out and blind splits list no misses, only counts; these counts are what says which kind of work
their figure asks for (rules that recognise more, or a ranking that orders what was recognised).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("accuracy_bench", ROOT / "bench" / "accuracy.py")
assert _spec is not None and _spec.loader is not None
accuracy = importlib.util.module_from_spec(_spec)
sys.modules["accuracy_bench"] = accuracy  # dataclasses resolve their module by name
_spec.loader.exec_module(accuracy)


def test_the_wanted_code_lower_in_the_report_is_a_ranking_fault():
    assert accuracy.miss_kind("load.weights_oom", ["load.runtime_oom", "load.weights_oom"]) == "ranked lower"


def test_a_top_code_that_places_nothing_is_a_recognition_gap():
    for top in (["load.unrecognized_failure"], ["access.unrecognized_failure", "access.timeout"],
                ["doctor.input_incomplete"], []):
        assert accuracy.miss_kind("load.cuda_mismatch", top) == "not named, nothing placed"


def test_another_named_cause_first_is_a_misreading():
    assert accuracy.miss_kind("load.engine_outdated", ["load.model_files"]) == "not named, another cause ranked first"
