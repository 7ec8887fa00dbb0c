"""Which phase a traceback frame belongs to, by the function it names: the engines' own call paths, as data.

An engineer reading an out-of-memory traceback with no start-up line around it looks at the frames:
raised under the model loader (load_model, load_weights, from_pretrained, weight_loader) it is the
weights; under the request path (execute_model in the engine loop, the scheduler's run_batch, TGI's
Prefill/Decode, generate) it happened while serving. doctor/data/oom_frames.jsonl holds those
function names per engine and phase, mined from each engine's loader and runner (one JSON object a
line: `phase`, `engine`, `functions`, an optional `path` the frame's file must contain when a name is
too common to stand alone, `source` `owner/repo@ref:path`, a `sample` frame, an optional `note`).

A frame whose function the table does not name is left to the milestone patterns of
doctor.logparse.events.PHASES, which read the whole frame line (a file under model_loader/).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from llm_doctor.logparse.catalogue import CatalogueError, rows

PATH = Path(__file__).resolve().parents[1] / "data" / "oom_frames.jsonl"
PHASES = ("weights", "profiling", "cuda_graph", "serving")
REQUIRED = ("phase", "engine", "functions", "source", "sample")
OPTIONAL = ("path", "note")

# the file and the function a frame names: Python's `File "x.py", line 1, in f` (and rich's `x.py:1 in f`),
# a C++ `frame #3: ns::f(args)`, a glibc backtrace `lib.so(f+0x1c) [0x..]`, gdb's `#3 0x.. in f (args)`
_PY = re.compile(r'^(?:File "(?P<file>[^"]*)", line \d+, in |(?P<file2>\S+\.py):\d+ in )(?P<fn>[\w.<>]+)')
_CPP = re.compile(r"^frame #\d+: (?:0x[0-9a-f]+ )?(?:[\w:<>~]+::)?(?P<fn>\w+)\s*\(")
_GLIBC = re.compile(r"^(?P<file>[\w./+-]+)\((?P<fn>\w+)\+0x[0-9a-f]+\) \[0x")
_GDB = re.compile(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(?:[\w:<>~]+::)?(?P<fn>\w+) \(")


@dataclass(frozen=True)
class FrameRule:
    phase: str
    engine: str
    path: str  # "" when the function's name is enough
    source: str


def parse(frame: str) -> tuple[str, str] | None:
    """(file, function) of a frame line, or None when the line is no frame this module reads."""
    for rx in (_PY, _CPP, _GLIBC, _GDB):
        m = rx.match(frame)
        if m:
            d = m.groupdict()
            return d.get("file") or d.get("file2") or "", d["fn"].rsplit(".", 1)[-1]
    return None


def load(path: Path = PATH) -> dict[str, list[FrameRule]]:
    """Function name -> its rules; CatalogueError on a bad entry (its sample must parse to one of its functions)."""
    table: dict[str, list[FrameRule]] = {}
    for where, entry in rows(path, REQUIRED, OPTIONAL):
        if entry["phase"] not in PHASES:
            raise CatalogueError(f"{where}: unknown phase {entry['phase']!r}")
        parsed = parse(entry["sample"])
        if parsed is None or parsed[1] not in entry["functions"]:
            raise CatalogueError(f"{where}: sample {entry['sample']!r} is no frame of its functions")
        rule = FrameRule(entry["phase"], entry["engine"], entry.get("path", ""), entry["source"])
        for fn in entry["functions"]:
            table.setdefault(fn, []).append(rule)
    return table


TABLE = load()


def phase(frame: str) -> str:
    """The phase the frame's function belongs to, or "" when the table does not name it."""
    parsed = parse(frame)
    if parsed is None:
        return ""
    file, fn = parsed
    for rule in TABLE.get(fn, ()):
        if not rule.path or rule.path in file:
            return rule.phase
    return ""
