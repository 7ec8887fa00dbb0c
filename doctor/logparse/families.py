"""Keyword families, as data: the words a failure is stated in, per cause, when no template knows its wording.

doctor/data/families.jsonl holds one family entry a line (docs/catalogue.md, "Keyword families"):
`family` (its name, quoted in the evidence as `recognised by: family: <name>`), `kind` (the event
kind whose check knows the fix), `words` (a case-insensitive regular expression; named groups are
values the check reads, e.g. the sizes of a TP split), `source` (`owner/repo@ref:path` of the
messages the words come from), `sample` (a message that must be recognised by this family, in the
table's order) and an optional `note`. Entries are tried in file order: a cause's own context
comes before the symptom words it shares with other causes ("Cannot allocate memory" next to
ibv_reg_mr is InfiniBand's memlock limit; "No space left on device" on a /dev/shm file is shared
memory). A family may have several entries, one per wording family and source.

A bad entry (unknown kind, missing field, a regex that does not compile, a sample that another
family claims first) fails the load with `file:line: reason`, so tests/test_failure_chains.py
fails before a broken table ships.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from llm_doctor.logparse.catalogue import CatalogueError, rows
from llm_doctor.logparse.events import KINDS

PATH = Path(__file__).resolve().parents[1] / "data" / "families.jsonl"
REQUIRED = ("family", "kind", "words", "source", "sample")
OPTIONAL = ("note",)


@dataclass(frozen=True)
class Family:
    name: str
    kind: str
    words: str  # the regular expression, case-insensitive
    source: str
    sample: str
    where: str  # file:line, for errors


def load(path: Path = PATH) -> list[Family]:
    """Every entry of the table, in order; CatalogueError on a bad one."""
    out = []
    for where, entry in rows(path, REQUIRED, OPTIONAL):
        if entry["kind"] not in KINDS:
            raise CatalogueError(f"{where}: unknown event kind {entry['kind']!r}")
        try:
            re.compile(entry["words"], re.I)
        except re.error as exc:
            raise CatalogueError(f"{where}: words do not compile ({exc})") from None
        out.append(Family(entry["family"], entry["kind"], entry["words"], entry["source"], entry["sample"], where))
    return out
