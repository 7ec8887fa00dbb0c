"""The scanner's prefilter run by `rg` or `grep -F`, in another process, over a file on disk.

The pure-Python prefilter (doctor.logparse.scan.CANDIDATE) lower-cases every block and runs a few
dozen regex passes over it: on a big log that is most of the work, done on the same core as the
parsing. A file on disk can instead be searched by ripgrep (or GNU grep) for the same literals,
case-insensitive in ASCII only (`--no-unicode`, `LC_ALL=C`: exactly what bytes.lower() folds),
reading the file as bytes (`-a`, no transcoding), or case-sensitive for a set the scanner searches
case-sensitively (the stat lines': rg searches a few literals of fixed case ~6x faster): it reports the byte offset
and the line number of every line (rg) or literal (grep) it finds, and the scanner parses the lines
holding them (rg's offsets are those lines' starts already: nothing per line is left to Python but
reading the numbers). Same literals, same folding, same bytes: the same lines, while the search runs on
another core. The line numbers spare the scanner counting the newlines of the whole file (bytes.count
reads ~1 GB/s, about what `grep -c` takes for the whole search): it counts only from the last line a
search numbered.

The scanner wants two answers per block: the lines its grammar may match and the engine's stat
lines (doctor.logparse.stat_lines). Each set of literals is its own search, in its own process: a
tool reports non-overlapping matches, so one search for both sets could hide a literal of one set
under a match of the other, and the lines of each set are then exact, with nothing to check again.

Where the tool and the scanner could differ, the scanner falls back to its own prefilter for that block: a block
that does not start a line or does not end with a newline (a line longer than the read size is cut
into pieces, and a literal across the cut is one match for the tool but none for the scanner). A
tool that fails or dies is noticed at the end of its output; the blocks from then on use the
Python prefilter.
"""

from __future__ import annotations

import bisect
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

MIN_BYTES = 4 * 1024 * 1024  # a smaller range is not worth starting a process for
_READ = 1 << 16
# the line number and byte offset that start each row of the tool's output (read after a newline put
# before the first: a pattern that starts with a literal byte is searched for it, twice as fast as `^` in MULTILINE)
_ROW = re.compile(rb"\n(\d+):(\d+):")


def find_tool() -> list[str] | None:
    """The command (without the patterns file) of the fastest tool here: rg on PATH or next to
    this Python (the `ripgrep` wheel installs it there), else grep; None when neither exists."""
    found = shutil.which("rg") or shutil.which("rg", path=str(Path(sys.executable).parent)) or shutil.which("grep")
    return command(found) if found else None


def command(exe: str) -> list[str]:
    """rg's or GNU grep's arguments for: these literals, bytes as they are, the line number and
    byte offset of every matching line (rg: one short row per line, its text left out by
    `--max-columns 1`; a matching line holds a literal, so it is longer) or of every match (grep:
    `--only-matching`, one row per match). Case-sensitive: FOLD asks for ASCII case folding."""
    if Path(exe).name.startswith("rg"):
        return [exe, "--no-config", "--fixed-strings", "--no-unicode", "--text", "--no-encoding",
                "--line-number", "--byte-offset", "--max-columns", "1", "--color", "never", "--no-messages"]
    return [exe, "--text", "--fixed-strings", "--line-number", "--byte-offset", "--only-matching", "--no-messages"]


FOLD = "--ignore-case"  # both tools' flag; ASCII only (rg: --no-unicode, grep: LC_ALL=C), as bytes.lower() folds


class ExternalPrefilter:
    """One tool and one patterns file per set of literals, for every range a scan searches (the
    files are removed at close). A set is (literals, fold): fold searches them in any ASCII casing."""

    def __init__(self, tool: list[str], sets: Iterable[tuple[Iterable[str], bool]]) -> None:
        self.tool = tool
        self.patterns: list[tuple[str, bool]] = []
        for literals, fold in sets:
            fd, name = tempfile.mkstemp(prefix="llm-doctor-literals-", suffix=".txt")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write("".join(lit + "\n" for lit in literals))
            self.patterns.append((name, fold))

    def search(self, path: str, start: int = 0) -> Hits:
        """The hits of each set in `path` from byte `start` on (each search reads its own descriptor of the file)."""
        return Hits([Search([*self.tool, *([FOLD] if fold else []), "--file", patterns], path, start) for patterns, fold in self.patterns],
                    _per_line(self.tool))

    def close(self) -> None:
        for name, _ in self.patterns:
            Path(name).unlink(missing_ok=True)


def _per_line(tool: list[str]) -> bool:
    """Whether the tool reports one row per line, at its start (rg, see command), not one per match (grep)."""
    return Path(tool[0]).name.startswith("rg")


class Hits:
    """The searches of one range, one per set of literals, handed out together block by block."""

    def __init__(self, searches: list[Search], per_line: bool) -> None:
        self.searches = searches
        self.per_line = per_line

    def take(self, block: bytes) -> tuple[tuple[list[int], list[int]], ...] | None:
        """Per set, the starts (from the block's start, ascending, each once) of the lines of the next
        block that hold a hit, and their line numbers (from the range's start, the first line 1);
        None when a search failed before it had certainly covered them (the caller prefilters that
        block itself)."""
        found = [search.take(len(block)) for search in self.searches]
        if any(f is None for f in found):
            return None
        if self.per_line:
            return tuple(found)  # type: ignore[arg-type]
        out = []
        for offsets, numbers in found:  # type: ignore[misc]
            lines = dict(zip(numbers, offsets, strict=True))  # a line's first match: (its start is found below)
            starts = [block.rfind(b"\n", 0, lines[no]) + 1 for no in sorted(lines)]
            out.append((starts, sorted(lines)))
        return tuple(out)

    def close(self) -> None:
        for search in self.searches:
            search.close()


class Search:
    """One tool process over one range: the offsets it reports, handed out block by block as the scanner reads the range."""

    def __init__(self, argv: list[str], path: str, start: int) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.lseek(fd, start, os.SEEK_SET)
            env = {**os.environ, "LC_ALL": "C"}  # grep: ASCII case folding, bytes, no locale errors
            self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                [*argv, "-"], stdin=fd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        except OSError:
            self.proc = None
        finally:
            os.close(fd)
        self.pos = 0  # offset (from `start`) of the next block
        self._offsets: list[int] = []  # the offsets read and not yet handed out, from _next on
        self._numbers: list[int] = []  # ... and their line numbers
        self._next = 0
        self._rest = b""
        self.failed = self.proc is None

    def take(self, size: int) -> tuple[list[int], list[int]] | None:
        """Offsets (from the block's start) of the hits in the next `size` bytes, and their line
        numbers; None when the tool failed before it had certainly covered them (the caller
        prefilters that block itself)."""
        end, out, numbers = self.pos + size, [], []
        while not self.failed:
            cut = bisect.bisect_left(self._offsets, end, self._next)
            pos = self.pos
            first = bisect.bisect_left(self._offsets, pos, self._next, cut)
            out += [at - pos for at in self._offsets[first:cut]]
            numbers += self._numbers[first:cut]
            self._next = cut
            if cut < len(self._offsets):
                self.pos = end
                return out, numbers
            if not self._more():
                break
        self.pos = end
        return None if self.failed else (out, numbers)

    def _more(self) -> bool:
        """Read more rows (`offset:...`, parsed all at once); False at the end of the output (failed
        is set if the tool did not succeed)."""
        assert self.proc is not None and self.proc.stdout is not None
        data = self.proc.stdout.read1(_READ)  # type: ignore[attr-defined]
        if not data:
            rows, self._rest = self._rest, b""
            if not rows:
                self.failed = self.proc.wait() not in (0, 1)  # 1: nothing found
                self._offsets, self._numbers, self._next = [], [], 0
                return False
        else:
            data = self._rest + data
            cut = data.rfind(b"\n") + 1
            rows, self._rest = data[:cut], data[cut:]
        found = _ROW.findall(b"\n" + rows)
        self._numbers, self._offsets, self._next = list(map(int, (no for no, _ in found))), list(map(int, (at for _, at in found))), 0
        return True

    def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self.proc = None
