"""Raw log line -> a clean message plus the process it came from.

Engine logs reach us dirty: ANSI colours (sometimes with the ESC byte lost in a paste, leaving
`[36m`), CRLF and literal `^M`, invalid UTF-8, a markdown quote `> ` or stray backticks, and one
or more prefixes stacked in front of the message: a collector's timestamp (`  | 2025-03-07T05:56:27Z
| `, Cloud Logging's `ERROR 2025-04-05T00:01:19.2Z`), a Ray/multiprocessing process tag
(`(VllmWorker rank=1 pid=4321)`, `(RayWorkerWrapper pid=N, ip=...)`), torch's `[rank0]:`, mpirun's
`[1,0]<stderr>:`, a container runtime's `stderr F`, and the engine's own record header (vLLM `INFO 05-12 10:11:12 [engine.py:123]`,
SGLang `[2025-03-10 16:21:21 TP1]`, TGI `2024-09-03T04:36:57.491823Z  INFO text_generation_launcher:`, Ollama's
slog `time=... level=ERROR source=sched.go:455`).
The grammar in events.py matches the message only, so it does not care which of these were there.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;?]*[A-Za-z]|(?<![\w\]])\[(?:\d{1,3};)*\d{1,3}m")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

_TS = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
STAMP = re.compile(r"\[?" + _TS)  # a record that starts with its time (doctor.collect.logs: is a text a log at all)

# prefixes, tried in a loop until none applies; each captures the useful bit (process, level)
_PREFIXES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("quote", re.compile(r"(?:>\s?)+|`+|\s*\|\s+(?=\d{4}-)")),
    # docker compose's service column: `qwen3-vl-32b  | (EngineCore_DP0 pid=413) ERROR ...`
    ("compose", re.compile(r"[a-z0-9][\w.-]*\s+\|\s(?=\S)")),
    ("sglang", re.compile(r"\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:[.,]\d+)?(?: (?P<proc>(?:TP|DP|PP|EP)\d+[\w ]*))?\]\s?")),
    (
        "tgi",
        re.compile(
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\s+(?P<level>TRACE|DEBUG|INFO|WARN|ERROR)\s+"
            r"(?:[\w:]+(?:\{[^}]*\})?:\s*)*"
        ),
    ),
    ("stamp", re.compile(r"(?:\[" + _TS + r"\]|" + _TS + r"(?=[\s|]))\s*\|?\s*")),
    # Go's log/slog text handler and logrus (Ollama): `time=... level=ERROR source=server.go:145 msg="..."`:
    # the record's head goes, `msg="..."` and the attributes after it (`error="..."`) stay the message
    ("slog", re.compile(r"time=\S+\s+level=(?P<level>[A-Za-z]+)(?:\s+source=\S+)?\s+(?=msg=)")),
    # a node's container log file (CRI): `<timestamp> stderr F <message>`, after the stamp went
    ("cri", re.compile(r"(?:stdout|stderr) [FP] ")),
    ("cloud", re.compile(r"(?P<level>DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL)\s+\d{4}-\d\d-\d\dT[\d:.]+Z\s*")),
    ("rank", re.compile(r"\[(?P<proc>rank\d+)\]:\s?")),
    ("mpi", re.compile(r"\[(?P<proc>\d+,\d+)\]<std(?:err|out)>:\s?")),
    ("proc", re.compile(r"\((?P<proc>[A-Za-z_][\w.]*(?: (?:rank=\d+|TP\d+|DP\d+|PP\d+))?,? ?pid=\d+(?:, ip=[\w.:<>-]+)?)\)\s?")),
    ("proc", re.compile(r"\((?P<proc>pid=\d+(?:, ip=[\w.:<>-]+)?)\)\s?")),
    (
        "vllm",
        re.compile(
            r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
            r"(?:\[[\w./-]+:\d+\]|[\w./-]+:\d+\])\s?"
        ),
    ),
    ("level", re.compile(r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)(?::\s+|\s+-\s+|\s{2,})")),
    # Python logging's `%(asctime)s - %(name)s - %(levelname)s - [%(filename)s:%(lineno)d - ]%(message)s` (LMDeploy
    # lmdeploy/utils.py v0.2-v0.16, and servers built the same way), after the stamp went: `- lmdeploy - WARNING - ...`
    ("pylog", re.compile(r"(?:-\s+)?[A-Za-z_][\w.]*\s+-\s+(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+-\s+(?:[\w.-]+\.py:\d+\s+-\s+)?")),
    # Xinference's `%(asctime)s %(name)-12s %(process)d %(levelname)-8s %(message)s` (xinference/deploy/utils.py)
    ("xinference", re.compile(r"[a-z_][\w]*(?:\.[\w]+)+\s+\d+\s+(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+")),
    # FastChat's `%(asctime)s | %(levelname)s | %(name)s | %(message)s` (fastchat/utils.py build_logger; its workers' stderr
    # goes through the `stderr` logger at ERROR, a vLLM worker's traceback included), after the stamp went: `ERROR | stderr | `
    ("fastchat", re.compile(r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) \| [\w.-]+ \| ?")),
)


@dataclass
class Line:
    no: int  # 1-based line number in its source
    text: str  # the message, all prefixes removed
    raw: str  # the line as written, minus colour codes and control bytes: what evidence quotes
    process: str = ""  # e.g. "VllmWorker rank=1 pid=4321", "TP1", "rank0"
    level: str = ""


def decode(raw: bytes | str) -> str:
    """Bytes -> text without ever failing: invalid UTF-8 becomes U+FFFD."""
    if isinstance(raw, bytes):
        return raw.decode("utf-8", errors="replace")
    return raw


def clean(text: str) -> str:
    """Strip line ends, `^M`, colour codes and control bytes (tabs kept)."""
    text = text.rstrip("\r\n").replace("^M", "")
    text = ANSI.sub("", text)
    if "\r" in text:  # tqdm redraws: keep the last frame
        text = text.rstrip("\r").rsplit("\r", 1)[-1]
    return CONTROL.sub("", text)


def _docker_json(text: str) -> str:
    """Docker's json-file log line (`{"log":"...\\n","stream":"stderr","time":"..."}`) -> its message."""
    if not text.startswith('{"log":'):
        return text
    try:
        message = json.loads(text).get("log")
    except (ValueError, AttributeError):
        return text
    return clean(message).strip() if isinstance(message, str) else text


def normalise(no: int, raw: bytes | str) -> Line:
    """One physical line -> Line with its prefixes peeled off."""
    line = clean(decode(raw))
    text, process, level = _docker_json(line.strip()), "", ""
    for _ in range(8):  # prefixes stack ("(EngineCore pid=1) (RayWorkerWrapper pid=2) INFO ...")
        for _name, pattern in _PREFIXES:
            m = pattern.match(text)
            if m and m.end() > 0:
                groups = m.groupdict()
                if groups.get("proc"):
                    process = groups["proc"].strip() if not process else process
                if groups.get("level"):
                    level = groups["level"].upper()
                text = text[m.end() :].lstrip()
                break
        else:
            break
    return Line(no, text, line, process, level)


# a terminal cuts a long line at its width: a cut line is exactly that long (one less: the paste dropped the cut space)
TERMINAL_WIDTHS = frozenset(n for w in (80, 100, 120, 132, 160, 200) for n in (w - 1, w))
WRAP_MIN = 100  # a message at least this long may have been hard-wrapped by a tool, whatever its width


def _cut(line: Line) -> bool:
    """The line may go on in the next one. Only lines of exactly a common terminal width count
    (not every long line): a steady-state log is all long lines, each line kept makes the scanner
    read the next one, and "every line >= 79" read whole SGLang logs line by line."""
    return len(line.raw.rstrip("\r\n")) in TERMINAL_WIDTHS or len(line.text) >= WRAP_MIN


def joined(prev: Line, line: Line) -> Line | None:
    """`line` as the rest of `prev` (a line carried() kept) as one Line: the halves joined as they
    are, since a cut falls mid-word as often as on a space (with the space when the paste kept it;
    the catalogue's templates match with or without it). None when `line` has a log prefix of its own (it starts a record) and
    `prev` is not a long message a tool may have wrapped anywhere."""
    if line.text != line.raw.strip() and len(prev.text) < WRAP_MIN:
        return None
    # the cut space survives at the end of the first half or the start of the second when the paste kept it
    space = " " if prev.raw[-1:].isspace() or line.raw[:1].isspace() else ""
    return Line(prev.no, prev.text + space + line.text, prev.raw + line.raw, prev.process or line.process, prev.level or line.level)


# the longest message a hard-wrap is rejoined into (the longest the corpus's logs rejoin is 1,263 characters): past
# it the lines are a run of long lines, not one cut message, and rejoining them all made each line's parse read
# every line before it (a run of n long lines no rule explains cost n^2 / 2 characters of regex searches)
WRAP_MAX = 2048


def carried(prev: Line | None, line: Line) -> Line | None:
    """What to keep, after a line no rule explained, in case the next line continues it: the
    message so far (`prev` joined with `line` when `line` continues it) when `line` was itself cut;
    `line` alone when the message so far would grow past WRAP_MAX, nothing when `line` alone is past it
    (SGLang's `server_args=ServerArgs(...)` of 3,000+ characters: rejoined with the next line, it was
    searched twice at each start of a crash loop)."""
    if not _cut(line) or len(line.text) > WRAP_MAX:
        return None
    whole = joined(prev, line) if prev is not None and len(prev.text) + len(line.text) <= WRAP_MAX else None
    return whole or line


class LineNumbers:
    """The number of the line that starts at an offset of a block of lines. Counting newlines is the
    one cost a scan would pay on every byte of a big log (bytes.count reads ~1 GB/s: what `grep -c`
    takes for its whole search), so this counts only from the nearest place it knows: the offset it
    was asked last, or the nearest line the external prefilter numbered (`known`: pairs of ascending
    line starts and their numbers, one per search). They are looked up where asked (bisect), not made
    into a dict per block: a worst-case block holds thousands of numbered lines and a few are asked."""

    def __init__(self, block: bytes, first_no: int, known: Sequence[tuple[list[int], list[int]]] = ()) -> None:
        self.block, self.pos, self.no = block, 0, first_no  # the line starting at pos has number no
        self.known = known

    def at(self, pos: int) -> int:
        at, no = self.pos, self.no
        for starts, numbers in self.known:
            i = bisect.bisect_right(starts, pos) - 1
            if i < 0:
                continue
            if starts[i] == pos:
                at, no = pos, numbers[i]
                break
            if pos - starts[i] < abs(pos - at):
                at, no = starts[i], numbers[i]
        if at != pos:
            no = no + self.block.count(b"\n", at, pos) if pos > at else no - self.block.count(b"\n", pos, at)
        self.pos, self.no = pos, no
        return no
