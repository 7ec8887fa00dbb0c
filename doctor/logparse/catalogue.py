"""The message catalogue: engines' and clients' own failure messages, as data, compiled into tolerant regexes.

Each line of doctor/data/catalogue/*.jsonl is one message as its source formats it (format:
docs/catalogue.md), with the event kind it means and where the wording comes from. Adding a
message is one line of data. The compiler makes each template match the message the way it
reaches us after a paste, not only the way it was printed:

- case-insensitive, searched anywhere in the cleaned message;
- every whitespace run matches any whitespace or none: a terminal wrap that fell on a space
  loses it when the scanner re-joins the cut line (scan.py joins the two halves as they are);
- quotes and backticks are optional and interchangeable (markdown eats backticks, shells and
  loggers change quotes);
- `{name:type}` placeholders become named groups (the checks read the numbers), literal text is
  escaped.

A bad entry (unknown kind or engine, missing field, bad placeholder, too little literal text for
the template to be safe on healthy logs, a sample its own template does not match) is a
CatalogueError naming file:line, raised when the grammar is built: a broken catalogue never ships.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import astuple, dataclass
from pathlib import Path

from llm_doctor.logparse import grammar_cache

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "catalogue"

ENGINES = frozenset(
    "vllm sglang tgi trtllm lmdeploy llamacpp ollama transformers torch cuda nccl ray kubernetes openai-python dotnet "
    "anthropic-python httpx requests aiohttp urllib3 node undici axios curl go java litellm cline claude-code "
    "open-webui langchain continue vercel-ai go-openai async-openai reqwest spring-ai llamaindex roo-code aider n8n "
    "nginx envoy cloudflare haproxy squid xinference exllamav2 mlc ktransformers other".split()
)
REQUIRED = ("kind", "template", "sample", "source", "engine")
OPTIONAL = ("fatal", "echo", "note")
# owner/repo@ref:path (ref: a tag or a commit where this wording exists)
SOURCE = re.compile(r"[\w.-]+/[\w.-]+@[\w.+/-]+:\S+")
MIN_LITERAL = 15  # literal characters (not counting spaces and quotes) a template needs to be safe on healthy logs

_NUM = r"\d[\d,]*(?:\.\d+)?"
TYPES = {
    "int": r"\d[\d,]*",
    "num": r"-?" + _NUM,
    "size": _NUM + r"\s*[KMGT]i?B",
    "word": r"[^\s'\"`]+",
    "path": r"[^\s'\"`]+",
    "any": r"[^\n]*?",
}
QUOTES = "'\"`‘’“”"
_QUOTE = "[" + re.escape(QUOTES) + "]?"
# `{{`, `}}`, a placeholder, or a brace that is neither (an error)
_TOKEN = re.compile(r"\{\{|\}\}|\{(?:(?P<name>[A-Za-z_]\w*)?(?::(?P<type>\w+))?)\}|[{}]")


class CatalogueError(ValueError):
    """A catalogue entry that cannot be used, with the file:line it is on."""


@dataclass(frozen=True)
class Entry:
    kind: str
    template: str
    sample: str
    source: str  # owner/repo@ref:path
    engine: str
    fatal: bool
    echo: bool
    note: str
    where: str  # file:line, for errors and for `llm-doctor catalogue`
    regex: str  # the compiled template (flags: re.I)
    literal: int  # its literal characters (no spaces, no quotes): the longer, the more specific
    words: tuple[str, ...]  # its literal runs between spaces, quotes and placeholders (lower-case)


class LazyPattern:
    """A template's regex (flags re.I), or a hand rule's (doctor.logparse.events._r), compiled at its
    first search: compiling the ~800 templates was a third of every start-up, while a line reaches a
    rule only when it holds the rule's word (doctor.logparse.events.match), so most are never searched.
    `pattern` and `flags` are the compiled regex's, available before it is compiled (prefilter,
    template_cache read only them); every other attribute is the compiled regex's. A source that sets
    global flags inline (`(?m)` first) is no LazyPattern: those flags would be missing from `flags`."""

    __slots__ = ("pattern", "flags", "_compiled")

    def __init__(self, source: str, flags: int = re.I) -> None:
        self.pattern, self.flags = source, int(flags | re.U)  # what re.compile(source, flags).flags is
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> object:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return getattr(self._compiled, name)


def compile_template(template: str) -> tuple[str, int]:
    """Template -> (regex source, count of literal characters that are neither space nor quote).
    ValueError for a brace that is not `{{`, `}}` or a well-formed placeholder."""
    out: list[str] = []
    names: set[str] = set()
    literal = 0
    pos = 0
    for m in _TOKEN.finditer(template):
        text = template[pos : m.start()]
        out.append(_literal(text))
        literal += sum(1 for c in text if not c.isspace() and c not in QUOTES)
        pos = m.end()
        token = m.group()
        if token in ("{{", "}}"):
            out.append(re.escape(token[0]))
            literal += 1
            continue
        if token in ("{", "}"):
            raise ValueError(f"unbalanced {token!r} at column {m.start() + 1} (write a literal brace as {token * 2})")
        name, kind = m.group("name"), m.group("type") or "any"
        if kind not in TYPES:
            raise ValueError(f"placeholder {token}: unknown type {kind!r} (one of {', '.join(TYPES)})")
        if kind == "any" and not template[: m.start()].strip():
            # tried from every position of a line that holds the rest's first word: quadratic on a long line
            raise ValueError(f"placeholder {token} opens the template: drop it (a template is searched anywhere in the line)")
        if name is None:  # a group of its own all the same: what it matched is no fixed text (events._fixed)
            out.append("(" + TYPES[kind] + ")")
            continue
        if name in names:
            raise ValueError(f"placeholder {token}: {name!r} is captured twice")
        names.add(name)
        out.append(f"(?P<{name}>{TYPES[kind]})")
    text = template[pos:]
    out.append(_literal(text))
    literal += sum(1 for c in text if not c.isspace() and c not in QUOTES)
    return "".join(out), literal


def _literal(text: str) -> str:
    out = []
    for run in re.findall(r"\s+|[" + re.escape(QUOTES) + r"]|[^\s" + re.escape(QUOTES) + r"]+", text):
        if run[0].isspace():
            out.append(r"\s*")
        elif run in QUOTES:
            out.append(_QUOTE)
        else:
            out.append(re.escape(run))
    return "".join(out)


def literal_words(template: str) -> tuple[str, ...]:
    """The runs of literal text a match always contains intact (whitespace may change or vanish,
    quotes may go, but a word is never split: a wrap re-joined by the scanner keeps its halves
    together), lower-case."""
    text = _TOKEN.sub(lambda m: m.group()[0] if m.group() in ("{{", "}}") else " ", template)
    return tuple(w.lower() for w in re.split(r"[\s" + re.escape(QUOTES) + r"]+", text) if w)


def parse_line(raw: str, where: str, kinds: Collection[str]) -> Entry:
    """One JSONL line -> a checked Entry (CatalogueError naming `where` otherwise)."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CatalogueError(f"{where}: not a JSON object ({exc.msg})") from None
    if not isinstance(data, dict):
        raise CatalogueError(f"{where}: not a JSON object")
    missing = [f for f in REQUIRED if not isinstance(data.get(f), str) or not data[f].strip()]
    if missing:
        raise CatalogueError(f"{where}: missing or empty field(s): {', '.join(missing)}")
    unknown = sorted(set(data) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise CatalogueError(f"{where}: unknown field(s): {', '.join(unknown)}")
    if data["kind"] not in kinds:
        raise CatalogueError(f"{where}: unknown event kind {data['kind']!r}")
    if data["engine"] not in ENGINES:
        raise CatalogueError(f"{where}: unknown engine {data['engine']!r}")
    if not SOURCE.fullmatch(data["source"]):
        raise CatalogueError(f"{where}: source {data['source']!r} is not owner/repo@ref:path")
    for flag in ("fatal", "echo"):
        if flag in data and not isinstance(data[flag], bool):
            raise CatalogueError(f"{where}: {flag} must be true or false")
    try:
        regex, literal = compile_template(data["template"])
        compiled = re.compile(regex, re.I)
    except (ValueError, re.error) as exc:
        raise CatalogueError(f"{where}: bad template: {exc}") from None
    if literal < MIN_LITERAL:
        raise CatalogueError(
            f"{where}: template has {literal} literal characters; at least {MIN_LITERAL} are needed "
            "so that it never matches a healthy line"
        )
    if not compiled.search(data["sample"]):
        raise CatalogueError(f"{where}: the sample does not match the template")
    return Entry(
        kind=data["kind"],
        template=data["template"],
        sample=data["sample"],
        source=data["source"],
        engine=data["engine"],
        fatal=data.get("fatal", True),
        echo=data.get("echo", False),
        note=data.get("note", ""),
        where=where,
        regex=regex,
        literal=literal,
        words=literal_words(data["template"]),
    )


def rows(path: Path, required: Collection[str], optional: Collection[str]) -> Iterator[tuple[str, dict]]:
    """(file:line, entry) for each line of a JSONL data table beside the catalogue (keyword families, OOM
    frames): JSON with every required field set, no field it does not know, and a source it can be read at.
    CatalogueError names the line otherwise, so a bad table fails at load, not while reading a log."""
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.name}:{no}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CatalogueError(f"{where}: not JSON ({exc.msg})") from None
        missing = [k for k in required if not entry.get(k)]
        unknown = sorted(set(entry) - set(required) - set(optional))
        if missing or unknown:
            raise CatalogueError(f"{where}: " + "; ".join(
                ([f"missing or empty field(s): {', '.join(missing)}"] if missing else []) +
                ([f"unknown field(s): {', '.join(unknown)}"] if unknown else [])))
        if not SOURCE.fullmatch(entry["source"]):
            raise CatalogueError(f"{where}: source {entry['source']!r} is not owner/repo@ref:path")
        yield where, entry


def load(kinds: Collection[str], paths: Iterable[Path] | None = None) -> list[Entry]:
    """Every entry of every catalogue file (default: all doctor/data/catalogue/*.jsonl, by name).
    Checking them compiles every template and matches its sample: the entries of files checked
    before (the same names and bytes, the same kinds) are remembered (doctor.logparse.grammar_cache)."""
    files = [(path.name, path.read_text(encoding="utf-8"))
             for path in (sorted(DATA_DIR.glob("*.jsonl")) if paths is None else list(paths))]
    digest = hashlib.sha256(repr((files, sorted(kinds))).encode()).hexdigest()
    checked = grammar_cache.recall(("catalogue.load", digest), lambda: [astuple(e) for e in _parse(files, kinds)], latest=True)
    return [Entry(*fields) for fields in checked]


def _parse(files: list[tuple[str, str]], kinds: Collection[str]) -> list[Entry]:
    entries: list[Entry] = []
    for name, text in files:
        for no, raw in enumerate(text.splitlines(), 1):
            where = f"{name}:{no}"
            if not raw.strip():
                raise CatalogueError(f"{where}: blank line (the format is plain JSONL)")
            entries.append(parse_line(raw, where, kinds))
    return entries
