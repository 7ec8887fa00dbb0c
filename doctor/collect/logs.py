"""Engine logs into Facts: files, folders, gzip, stdin (`-`), `docker logs`, `kubectl logs`.

Every source is streamed in blocks of whole lines (lines capped at 64 KiB, so a file without
newlines cannot fill memory) through one doctor.logparse.scan.LogScanner. A big file is read tail
first: the last TAIL_BYTES (where a crash is) before the rest, so a scan the deadline cuts still
diagnoses the crash. What was not read (cut by the deadline, truncated gzip, an unreadable or
binary file met in a folder, a tool that is not installed, an empty log) is a gap in facts.gaps
(doctor.input_incomplete), never silence and never a traceback; a path the user named that does
not exist or cannot be read, and stdin that is neither text nor gzip, are usage errors (InputError). After the last source, the engine arguments the log printed are parsed by
doctor.engine_args and merged into facts.deployment, and the model's architecture is looked up
in the shipped table, so the checks can compute fixes offline from the bundle.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO

from llm_doctor.engine import Deadline
from llm_doctor.facts import Facts
from llm_doctor.facts.inputs import InputGap
from llm_doctor.facts.logs import LogFacts, LogSetup
from llm_doctor.logparse import external_prefilter as xp
from llm_doctor.logparse import stat_lines
from llm_doctor.logparse.failures import is_record, stated
from llm_doctor.logparse.lines import normalise
from llm_doctor.logparse.scan import EXTERNAL_LITERALS, LogScanner
from llm_doctor.redact import Redactor

BLOCK = 1024 * 1024  # read size: big enough that per-read costs vanish, small enough to stay flat
CHUNK_CHECK = 64 * 1024  # bytes looked at to tell a log from binary data
WALK_SUFFIXES = {".log", ".txt", ".out", ".gz"}
TAIL_BYTES = 16 * BLOCK  # a file bigger than this (and a block) is read tail first
PROGRESS_AFTER = 1.0  # seconds of scanning after which progress is shown (on a terminal)
SHAPE_BYTES, SHAPE_LINES = 256 * 1024, 2000  # how much of a text nothing was found in is looked at for log records
_AUTO: list[str] = []  # LogCollector(tool=...): pick the external prefilter tool found here


class InputError(ValueError):
    """Input the user named cannot be read at all (a usage error, exit 2): it names the input."""


def check_named(paths: list[str]) -> None:
    """Every path the user named exists and can be read (stdin `-` aside): before any work."""
    for p in paths:
        if p == "-":
            continue
        path = Path(p)
        if not path.exists():
            raise InputError(f"{p}: no such file or folder")
        if not os.access(p, os.R_OK) or (path.is_dir() and not os.access(p, os.X_OK)):
            raise InputError(f"{p}: permission denied")


def read_blocks(fh: IO[bytes], deadline: Deadline | None = None, limit: int | None = None) -> Iterator[bytes]:
    """Blocks of whole lines (about BLOCK bytes; a line longer than that is cut into pieces),
    until EOF, `limit` bytes, or the deadline. `read1` returns what a pipe has without waiting.
    A file that can seek gives each block with one copy: the part line after the last newline is
    read again with the next block (a seek back), not carried over and joined to it (two copies of
    every byte: ~0.1 s of a 512 MB log)."""
    read = getattr(fh, "read1", fh.read)
    rewind = _seekable(fh)
    carry = b""
    left = limit
    while True:
        want = BLOCK if left is None else min(BLOCK, left)
        data = read(want)
        if rewind and data and len(data) == want and (left is None or want < left):
            cut = data.rfind(b"\n") + 1
            if 0 < cut < len(data):
                fh.seek(cut - len(data), os.SEEK_CUR)
                data = data[:cut]
        if left is not None:
            left -= len(data)
        if not data:
            if carry:
                yield carry
            return
        buf = carry + data if carry else data
        cut = buf.rfind(b"\n")
        if cut < 0:
            carry = buf if len(buf) < BLOCK else b""
            if not carry:
                yield buf
        else:
            carry = buf[cut + 1 :]
            yield buf[: cut + 1] if carry else buf
        if deadline is not None and deadline.expired():
            raise TimeoutError("the deadline was reached while reading the log")
        if left == 0:
            if carry:
                yield carry
            return


def _seekable(fh: IO[bytes]) -> bool:
    try:
        return fh.seekable() and not isinstance(fh, gzip.GzipFile)  # (a gzip seek back decompresses again)
    except (OSError, ValueError):
        return False


def expand(paths: list[str], suffixes: set[str] = WALK_SUFFIXES) -> list[str]:
    """Folders -> their files with these suffixes (default *.log, *.txt, *.out, *.gz; recursively,
    sorted); other paths as given. A folder with none of them is an InputError: nothing would be read."""
    out: list[str] = []
    for p in paths:
        path = Path(p)
        if p != "-" and path.is_dir():
            found = sorted(str(f) for f in path.rglob("*") if f.is_file() and f.suffix.lower() in suffixes)
            if not found:
                raise InputError(f"{p}: no file to read in this folder (looked for {', '.join(sorted(suffixes))})")
            out += found
        else:
            out.append(p)
    return out


def _open(path: str) -> IO[bytes]:
    if path == "-":
        stdin = sys.stdin.buffer
        if stdin.peek(2)[:2] == b"\x1f\x8b":  # type: ignore[attr-defined]
            return gzip.GzipFile(fileobj=stdin, mode="rb")  # type: ignore[return-value]
        return stdin
    fh = open(path, "rb")  # noqa: SIM115 - closed by the caller
    magic = fh.read(2)
    fh.seek(0)
    if magic == b"\x1f\x8b":
        fh.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return fh


class Progress:
    """`reading engine.log: 212 of 512 MiB` on stderr, redrawn in place, once a scan has taken more
    than PROGRESS_AFTER seconds, and only when stderr is a terminal (never in a pipeline's output)."""

    def __init__(self, name: str, total: int | None, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stderr
        self.on = self.stream.isatty()
        self.name, self.total, self.done = name, total, 0
        self.start = self.shown = time.monotonic()
        self.width = 0

    def add(self, size: int) -> None:
        self.done += size
        now = time.monotonic()
        if not self.on or now - self.start < PROGRESS_AFTER or now - self.shown < 0.1:
            return
        self.shown = now
        of = f" of {self.total / BLOCK:.0f}" if self.total else ""
        text = f"reading {self.name}: {self.done / BLOCK:.0f}{of} MiB"
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def close(self) -> None:
        """Erase the line (the report follows on stdout)."""
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


class LogCollector:
    """One scan over several sources; `finish` puts the result into facts. A big file on disk is
    prefiltered by `tool` (doctor.logparse.external_prefilter; found here by default, None: the
    scanner's own prefilter) when its range is at least `external_min` bytes."""

    def __init__(self, facts: Facts, deadline: Deadline, tool: list[str] | None = _AUTO) -> None:
        self.facts = facts
        self.deadline = deadline
        self.scanner = LogScanner()
        self.tool = xp.find_tool() if tool is _AUTO else tool
        self.external_min = xp.MIN_BYTES

    def problem(self, text: str) -> None:
        self.scanner.facts.problems.append(text)
        self.facts.notes.append(text)

    def gap(self, source: str, reason: str, read: int | None = None, total: int | None = None, since: float | None = None) -> None:
        self.problem(f"{source}: {reason}")
        seconds = time.monotonic() - since if since is not None else None
        self.facts.gaps.append(InputGap(source, reason, read, total, seconds))

    def add_stream(self, name: str, fh: IO[bytes], named: bool = False, total: int | None = None,
                   scanner: LogScanner | None = None, limit: int | None = None,
                   cut: Callable[[int], str] | None = None, hits: xp.Hits | None = None,
                   progress: Progress | None = None) -> bool:
        """Scan one stream; False when it was cut (the deadline) or unreadable, after saying so.
        `cut` words the gap a deadline leaves from the bytes read (the default: the rest was not read).
        `hits`: the external prefilter's search of the same range."""
        scanner = scanner or self.scanner
        scanner.start_source(name)
        before, start = scanner.facts.bytes_read, time.monotonic()
        first, whole = True, True  # whole: the next block starts a line
        own = progress is None
        progress = progress or Progress(name, total)
        try:
            for block in read_blocks(fh, self.deadline, limit):
                if first:
                    first = False
                    if _looks_binary(block):
                        if named:
                            raise InputError(f"{name}: binary data, not a text log (nor gzip)")
                        self.gap(name, "binary data, not a text log; skipped")
                        return False
                found = hits.take(block) if hits is not None else None
                ends = block.endswith(b"\n")  # else a piece of a line longer than a block: see external_prefilter
                scanner.feed_block(block, self.deadline.expired, found if whole and ends else None)
                whole = ends
                progress.add(len(block))
        except TimeoutError:  # before OSError: TimeoutError is one
            read = scanner.facts.bytes_read - before
            scanner.facts.cut_run = scanner.facts.runs - 1
            scanner.stopped()
            self.gap(name, cut(read) if cut else "cut by the deadline; the rest was not read", read, total, start)
            return False
        except (EOFError, gzip.BadGzipFile, OSError) as exc:
            self.gap(name, f"truncated or unreadable ({type(exc).__name__}: {exc}); read what was there",
                     scanner.facts.bytes_read - before, total, start)
            return False
        finally:
            if hits is not None:
                hits.close()
            if own:
                progress.close()
        if scanner.facts.bytes_read == before and limit is None:
            self.gap(name, "empty: nothing to read")
        return True

    def add_path(self, path: str, named: bool = True) -> None:
        """One file (named: given by the user, so unreadable is a usage error; else found in a folder)."""
        if path != "-" and not Path(path).exists():
            if named:
                raise InputError(f"{path}: no such file")
            self.gap(path, "no such file")
            return
        try:
            fh = _open(path)
        except OSError as exc:
            if named:
                raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from None
            self.gap(path, f"cannot open ({exc.strerror or exc})")
            return
        plain = isinstance(fh, io.BufferedReader) and path != "-" and stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
        size = os.fstat(fh.fileno()).st_size if plain else None
        external = xp.ExternalPrefilter(self.tool, EXTERNAL_LITERALS) if plain and self.tool and size >= self.external_min else None
        progress = Progress("<stdin>" if path == "-" else path, size)
        try:
            if size is not None and size > TAIL_BYTES + BLOCK:
                self._tail_first(path, fh, size, external, progress)
            else:
                self.add_stream("<stdin>" if path == "-" else path, fh, named=named or path == "-", total=size,
                                hits=external.search(path) if external else None, progress=progress)
        finally:
            progress.close()
            if external:
                external.close()
            if path != "-":
                fh.close()

    def _tail_first(self, path: str, fh: IO[bytes], size: int, external: xp.ExternalPrefilter | None,
                    progress: Progress) -> None:
        """The last TAIL_BYTES first (from the first whole line), then the rest; when the rest is cut
        by the deadline, the tail still stands, its lines counted from where it starts."""
        fh.seek(size - TAIL_BYTES)
        skipped = fh.readline()
        tail_at = size - TAIL_BYTES + len(skipped)
        tail = self.scanner.sibling()
        self.add_stream(path, fh, named=True, total=size, scanner=tail,
                        hits=external.search(path, tail_at) if external else None, progress=progress)
        fh.seek(0)

        def cut(read: int) -> str:
            return (f"cut by the deadline: read the first {read / BLOCK:.1f} MiB and the last {(size - tail_at) / BLOCK:.1f} MiB "
                    f"(tail first, line numbers there count from its start); {(tail_at - read) / BLOCK:.1f} MiB in between "
                    "were not read")

        whole = self.add_stream(path, fh, named=True, total=size, limit=tail_at, cut=cut,
                                hits=external.search(path) if external and tail_at >= self.external_min else None,
                                progress=progress)
        self.scanner.absorb(tail, continuation=whole)

    def add_command(self, name: str, argv: list[str]) -> None:
        """Stream a command's output (stdout and stderr together, as `docker logs` splits them)."""
        if shutil.which(argv[0]) is None:
            self.gap(name, f"`{argv[0]}` is not installed here, so the log could not be read; "
                           f"save it with `{' '.join(argv)} > engine.log 2>&1` and run `llm-doctor analyze engine.log`")
            return
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        except OSError as exc:
            self.gap(name, f"could not run {argv[0]}: {exc}")
            return
        assert proc.stdout is not None
        try:
            self.add_stream(name, proc.stdout)  # type: ignore[arg-type]
        finally:
            proc.stdout.close()
            try:
                rc = proc.wait(timeout=max(0.1, self.deadline.remaining()))
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
        if rc:
            self.gap(name, f"`{' '.join(argv)}` exited with status {rc}")

    def finish(self) -> LogFacts:
        logs = self.scanner.finish()
        redactor = Redactor()
        for event in logs.events:
            event.lines = [redactor.text(x) for x in event.lines]
        self.facts.logs = logs
        _deployment(self.facts, self.scanner.args_text(), self.scanner.commands)
        stat_lines.into_facts(self.facts, self.scanner.stats.metrics(logs.engine))
        return logs


_CONTROL = bytes(b for b in range(1, 32) if b not in b"\t\n\r\x0b\x0c\x1b")


def _looks_binary(head: bytes) -> bool:
    """Text logs hold no control bytes but tabs, line ends and ANSI escapes; a core dump or an
    archive is full of them. NUL bytes are left out of the count: a log with a hole of NULs (a
    crash while writing, a preallocated file) or UTF-16 text is still a log, and the scanner drops
    them. Binary means most of the sample is, not a stray run."""
    sample = head[:CHUNK_CHECK].replace(b"\x00", b"")
    if not sample:
        return False
    controls = len(sample) - len(sample.translate(None, _CONTROL))
    return controls > len(sample) // 20


def _deployment(facts: Facts, args_text: str, commands: list[str] | None = None) -> None:
    """Engine arguments the log printed -> facts.deployment; the model's architecture -> facts.model.
    What the engine printed it ran with beats a command line quoted in the log, which fills the gaps
    (`vllm serve M --tp 32` pasted above a crash that printed no arguments)."""
    from llm_doctor import engine_args

    logs = facts.logs
    assert logs is not None
    cfg = engine_args.parse_log_args(args_text) if args_text else None
    for command in commands or []:
        quoted = engine_args.parse_command(command, source="command line in the log")
        if quoted.engine:
            cfg = cfg.merge(quoted) if cfg is not None and cfg.engine else quoted
    if cfg is None or not cfg.engine:
        if logs.engine in ("", "client"):
            return
        from llm_doctor.facts.deployment import EngineConfig

        cfg = EngineConfig(engine=logs.engine)
    cfg.engine_version = cfg.engine_version or logs.engine_version
    cfg.engine_generation = cfg.engine_generation or logs.engine_generation
    if not logs.engine_version:
        logs.engine_version = cfg.engine_version
    facts.deployment = facts.deployment.merge(cfg) if facts.deployment else cfg
    if facts.model is None and facts.deployment.model:
        from llm_doctor import models

        try:
            facts.model = models.known(facts.deployment.model)
        except (OSError, ValueError, KeyError):
            facts.model = None


# "ok" says that everything was read and judged: a text of which no line is anything the doctor reads
# was not judged, and an all-clear on it would claim what nobody looked at
NOT_UNDERSTOOD = ("nothing in it is output the doctor reads (no engine or client log line, error, crash, stat line or launch "
                  "command), so it could not be judged: pass the engine's or client's own log")


def _understood_nothing(logs: LogFacts) -> bool:
    """No line of the scanned text was anything: no event, no start or serving, no setup fact (an engine
    or a proxy, its variables or a loopback URL named in a sentence is no line of its log)."""
    return not (logs.events or logs.started or logs.ready
                or replace(logs.setup, proxy="", proxy_named=False, loopback_url=False, docker_host_mapped=False) != LogSetup())


def log_shaped(path: str) -> bool:
    """Some line of the file's head is a log record (a level, a timestamp, a process tag: NCCL's INFO
    lines, an unknown program's log): the failure reader read every such record for the shapes a
    failure takes and found none, so the log was judged. Prose, a table, a paste of notes: not.
    stdin cannot be read again: counted as a log."""
    if path == "-":
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(SHAPE_BYTES)
    except OSError:
        return True
    if head[:2] == b"\x1f\x8b":
        return True  # a gzip the collector read: its text is not here to look at again
    for no, raw in enumerate(head.splitlines()[:SHAPE_LINES], 1):
        if is_record(normalise(no, raw)):
            return True
    return False


def load_log(path: str, facts: Facts, deadline: Deadline, only_if_events: bool = False, named: bool = True) -> None:
    """`analyze` fallback for a file no other reader claims: scan it into facts.logs (merging with
    logs read before, so several files make one diagnosis). With `only_if_events` (a file another
    reader already took, e.g. an nvidia-smi table), the scan is kept only if it found log events."""
    previous, deployment, model, metrics = facts.logs, facts.deployment, facts.model, facts.metrics
    notes, gaps = len(facts.notes), len(facts.gaps)
    collector = LogCollector(facts, deadline)
    collector.add_path(path, named=named and not only_if_events)
    logs = collector.finish()
    # a deployment that only names the engine came from a word ("vLLM" in a sentence), not from its arguments
    argued = facts.deployment is not None and facts.deployment != deployment and bool(facts.deployment.model or facts.deployment.sources)
    contributed = argued or facts.metrics != metrics
    if not only_if_events and len(facts.gaps) == gaps and not contributed and _understood_nothing(logs) and not log_shaped(path):
        facts.gaps.append(InputGap(path, NOT_UNDERSTOOD))
    # tool output with a failure pasted into it: a rule recognised something, an exception or crash, or
    # a line that states a failure by its shape (an error object, a 5xx answer); a word like "Not
    # Supported" in an nvidia-smi -q listing is no failure
    # (or the run's own start or ready line after a launch command: a start that never finished is judged, a ready
    # server is the run shown)
    if only_if_events and not (logs.started or logs.ready) and not any(
            e.kind != "error_line" or stated(str(e.values.get("summary", ""))) for e in logs.events):
        facts.logs, facts.deployment, facts.model = previous, deployment, model
        del facts.notes[notes:], facts.gaps[gaps:]
        return
    if previous is not None:
        _merge(previous, logs)
        facts.logs = previous


def collect(paths: list[str], docker: str | None, k8s: str | None, namespace: str | None, previous: bool,
            facts: Facts, deadline: Deadline) -> LogFacts | None:
    """`run --log/--docker/--k8s`: every source into one LogFacts."""
    if not (paths or docker or k8s):
        return None
    collector = LogCollector(facts, deadline)
    for path in expand(paths):
        collector.add_path(path, named=path in paths)
    if docker:
        collector.add_command(f"docker logs {docker}", ["docker", "logs", docker])
    if k8s:
        argv = ["kubectl", "logs", k8s] + (["--namespace", namespace] if namespace else [])
        collector.add_command(f"kubectl logs {k8s}", argv + ["--all-containers=true"])
        if previous:
            collector.add_command(f"kubectl logs --previous {k8s}", argv + ["--previous"])
    return collector.finish()


def _merge(into: LogFacts, new: LogFacts) -> None:
    """Another source's log facts after these: its runs follow. A source with no event (a person's notes, a
    benchmark summary) starts no run of the engine: the run judged stays the one the events belong to."""
    offset = into.runs
    for event in new.events:
        event.run += offset
    if new.events:
        into.runs += new.runs
    into.sources += new.sources
    into.lines_read += new.lines_read
    into.bytes_read += new.bytes_read
    into.events += new.events
    into.problems += new.problems
    into.engine = into.engine if into.engine not in ("", "client") else new.engine or into.engine
    into.engine_version = into.engine_version or new.engine_version
    into.engine_generation = into.engine_generation or new.engine_generation
    for name, value in vars(new.setup).items():
        if getattr(into.setup, name) in (None, [], ""):
            setattr(into.setup, name, value)
