"""Facts read from engine logs: the setup the log describes and the typed events it holds."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LogEvent:
    kind: str  # e.g. "cuda_oom", "kv_cache_too_small", "nccl_error" (doctor/logparse/events.py)
    source: str = ""  # file the line came from
    line_no: int = 0
    lines: list[str] = field(default_factory=list)  # the evidence, redacted
    values: dict[str, object] = field(default_factory=dict)


@dataclass
class LogFacts:
    sources: list[str] = field(default_factory=list)
    lines_read: int = 0
    engine: str = ""
    engine_version: str = ""
    events: list[LogEvent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unreadable, empty, binary, truncated
