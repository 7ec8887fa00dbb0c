"""What the grammar's regexes require and allow, remembered on disk between runs.

Before it reads a line, every `analyze` derives the same facts about the same ~1,000 regexes: the
literals each match must hold (prefilter.factors), whether a pattern treats all digits alike and
looks around (template_cache), and whether each catalogue entry is valid (catalogue.load). Each
takes a parse of the regex by `re`'s own parser, in Python: together most of a second of start-up,
paid again on a 1 kB log. They are pure functions of their arguments (a pattern's source and flags,
the catalogue files' text), so they are remembered by exactly those, in one file under the user
cache dir whose name is a hash of the code that computes them and of the Python version (a change to
either starts a new file). A file that cannot be read, parsed or written is the same as none: the
values are computed again, so the results never differ (tests/test_grammar_cache.py).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import marshal
import os
import sys
import tempfile
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
# the modules whose functions' values are kept: their code is part of every value
CODE = ("grammar_cache.py", "prefilter.py", "template_cache.py", "relaxed.py", "catalogue.py")
MAX_ENTRIES = 50_000  # past this (a catalogue edited many times), only what this run used is written back
# another code version's file untouched this long is removed when this one is written: upgrades do not pile up
# ~0.6 MB each, and a second install still in use keeps its own file fresh by writing it
STALE_S = 7 * 24 * 3600


def directory() -> Path:
    """$LLM_DOCTOR_CACHE, else $XDG_CACHE_HOME/llm-doctor, else ~/.cache/llm-doctor (as doctor.collect.hub)."""
    base = os.environ.get("LLM_DOCTOR_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "llm-doctor")
    return Path(base) / "grammar"


@functools.cache
def path() -> Path:
    digest = hashlib.sha256(sys.version.encode())
    for name in CODE:
        digest.update(Path(__file__).with_name(name).read_bytes())
    return directory() / f"{digest.hexdigest()[:20]}.marshal"


class _Store:
    """The values of this process: read from the file at first use, written back at exit when new ones were computed."""

    def __init__(self) -> None:
        self.values: dict[Hashable, Any] | None = None
        self.used: set[Hashable] = set()
        self.latest: set[Hashable] = set()  # functions of whole files: only the value this run used is kept (recall)
        self.new = False

    def load(self) -> dict[Hashable, Any]:
        if self.values is None:
            self.values = {}
            try:
                found = marshal.loads(path().read_bytes())
            except (OSError, EOFError, ValueError, TypeError):
                found = None
            if isinstance(found, dict):
                self.values = found
            atexit.register(self.save)
        return self.values

    def save(self) -> None:
        if not self.new or self.values is None:
            return
        values = self.values
        if len(values) > MAX_ENTRIES:
            values = {k: v for k, v in values.items() if k in self.used}
        elif self.latest:
            values = {k: v for k, v in values.items() if k in self.used or k[0] not in self.latest}  # type: ignore[index]
        data = marshal.dumps(values)  # recall kept only what marshal writes
        try:
            target = path()
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=".grammar-", dir=target.parent)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(name, target)  # another process writing at once: one of the two whole files wins
            finally:
                Path(name).unlink(missing_ok=True)
        except OSError:
            return
        self.new = False
        _prune(target)


def _prune(kept: Path) -> None:
    """The files of other code versions, unwritten for STALE_S, removed; one that cannot be is left (a
    cache is never a reason to fail)."""
    cutoff = time.time() - STALE_S
    try:
        for old in kept.parent.glob("*.marshal"):
            if old != kept and old.stat().st_mtime < cutoff:
                old.unlink()
    except OSError:
        return


_STORE = _Store()


def recall(key: tuple[Hashable, ...], compute: Callable[[], T], latest: bool = False) -> T:
    """The value kept for `key`, else compute() (kept, when marshal can write it). The key names the
    function and holds every argument the value depends on; the value is shared: never change it.
    `latest`: the value is of whole files that are edited (the catalogue, ~0.5 MB a version), so a
    new one replaces the others of the same function: kept, every version edited under one code
    version piled up in its file and was read back by every run (19 of them: 9 MB, +30 MB of RSS)."""
    values = _STORE.load()
    _STORE.used.add(key)
    if latest and key[0] not in _STORE.latest:
        _STORE.latest.add(key[0])
        _STORE.new = _STORE.new or any(k != key and k[0] == key[0] for k in values)  # type: ignore[index]  # (older ones go)
    try:
        return values[key]
    except KeyError:
        pass
    value = compute()
    try:
        marshal.dumps((key, value))
    except ValueError:
        return value
    values[key] = value
    _STORE.new = True
    return value


def remembered(fn: Callable[..., T]) -> Callable[..., T]:
    """fn(*args) kept by its name and arguments (strings, numbers, tuples of them)."""
    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def wrapper(*args: Hashable) -> T:
        return recall((name, *args), lambda: fn(*args))

    return wrapper
