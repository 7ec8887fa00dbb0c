"""Read saved artefacts for `analyze`: bundles, logs and tool outputs, each recognised by its
content (not its name), all combined into one Facts.

A reader is (kind, sniff, load): `sniff(head)` looks at the first bytes of a file; `load(path,
facts, deadline)` streams the file into the facts. The first reader whose sniff says yes wins;
engine logs are the fallback. Folders are walked for *.log, *.txt, *.out, *.json and *.gz.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from doctor.collect import now
from doctor.engine import Deadline
from doctor.facts import FACTS_SCHEMA, Facts
from doctor.facts.inputs import InputGap

SNIFF_BYTES = 64 * 1024
WALK_SUFFIXES = {".log", ".txt", ".out", ".json", ".gz", ".xml"}


@dataclass(frozen=True)
class Reader:
    kind: str
    sniff: Callable[[str], bool]
    load: Callable[[str, Facts, Deadline], None]


def _is_bundle(head: str) -> bool:
    return head.lstrip().startswith("{") and FACTS_SCHEMA in head[:4096]


def _load_bundle(path: str, facts: Facts, deadline: Deadline) -> None:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    loaded = Facts.from_dict(data)
    for name in ("settings", "endpoint", "logs", "deployment", "model", "gpus", "host", "metrics", "cluster"):
        if getattr(loaded, name) is not None:
            setattr(facts, name, getattr(loaded, name))
    facts.notes += loaded.notes
    facts.collected_at = loaded.collected_at or facts.collected_at


READERS: list[Reader] = [Reader("bundle", _is_bundle, _load_bundle)]


def _lazy(module: str, func: str) -> Callable[[str, Facts, Deadline], None]:
    """A loader imported only when a file of its kind is met (keeps `--help` fast)."""

    def load(path: str, facts: Facts, deadline: Deadline) -> None:
        import importlib

        getattr(importlib.import_module(module), func)(path, facts, deadline)

    return load


def _sniff(module: str, func: str) -> Callable[[str], bool]:
    def sniff(head: str) -> bool:
        import importlib

        return bool(getattr(importlib.import_module(module), func)(head))

    return sniff


# GPU and engine artefacts (perf helper): nvidia-smi table / -q / -q -x / nvlink, topo -m, /metrics, launch command
READERS += [
    Reader("nvidia-smi -q -x", _sniff("doctor.logparse.nvidia_smi", "is_xml"), _lazy("doctor.collect.gpu", "load_xml")),
    Reader("nvidia-smi -q", _sniff("doctor.logparse.nvidia_smi", "is_query"), _lazy("doctor.collect.gpu", "load_query")),
    Reader("nvidia-smi", _sniff("doctor.logparse.nvidia_smi", "is_table"), _lazy("doctor.collect.gpu", "load_table")),
    Reader("nvidia-smi nvlink", _sniff("doctor.logparse.nvidia_smi", "is_nvlink_status"), _lazy("doctor.collect.gpu", "load_nvlink")),
    Reader("nvidia-smi topo", _sniff("doctor.logparse.topo", "looks_like_topo"), _lazy("doctor.collect.gpu", "load_topo")),
    Reader("metrics", _sniff("doctor.logparse.metrics_text", "looks_like_metrics"), _lazy("doctor.collect.metrics", "load_scrape")),
    Reader("command line", _sniff("doctor.collect.host", "looks_like_command"), _lazy("doctor.collect.host", "load_command")),
]


def head_of(path: str) -> str:
    import gzip

    with open(path, "rb") as fh:
        raw = fh.read(SNIFF_BYTES)
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as gz:
                raw = gz.read(SNIFF_BYTES)
        except (OSError, EOFError):
            raw = b""
    return raw.decode("utf-8", errors="replace")


def load_paths(paths: list[str], deadline: Deadline) -> Facts:
    from doctor.collect import logs

    facts = Facts(collected_at=now())
    logs.check_named(paths)
    for path in logs.expand(paths, WALK_SUFFIXES):
        named = path in paths
        try:
            head = "" if path == "-" else head_of(path)
        except OSError as exc:  # a file in a folder that vanished or cannot be read: the rest goes on
            facts.gaps.append(InputGap(path, f"cannot read ({exc.strerror or exc})"))
            continue
        reader = next((r for r in READERS if path != "-" and r.sniff(head)), None)
        if reader is None:
            logs.load_log(path, facts, deadline, named=named)
        else:
            reader.load(path, facts, deadline)
            if reader.kind != "bundle":  # tool output pasted into a log: the engine's errors count too
                logs.load_log(path, facts, deadline, only_if_events=True)
    return facts
