"""The Facts snapshot: everything the collectors gathered, typed, with a JSON round-trip.

Checks read only this. A saved bundle (`--save-bundle`) is `Facts.to_dict()` as JSON, so
`llm-doctor analyze bundle.json` reproduces a diagnosis offline. Facts never hold a secret: the
settings section keeps the key masked and its traits, and the redactor runs over the bundle too.
Each section lives in its own module and is owned by one area (access, logs, gpu, ...).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

from llm_doctor.facts.access import EndpointFacts, SettingsFacts
from llm_doctor.facts.cluster import ClusterFacts
from llm_doctor.facts.deployment import EngineConfig
from llm_doctor.facts.gate import GateFacts, ReadyFacts
from llm_doctor.facts.gpu import GpuFacts
from llm_doctor.facts.host import HostFacts
from llm_doctor.facts.inputs import InputGap
from llm_doctor.facts.logs import LogFacts
from llm_doctor.facts.metrics import MetricsFacts
from llm_doctor.facts.model import ModelFacts
from llm_doctor.facts.plan import MemoryPlan
from llm_doctor.facts.stated import FailureStatement, PerfStatement, WordedGuess

FACTS_SCHEMA = "llm-doctor.facts/1"

T = TypeVar("T")


@dataclass
class Facts:
    schema: str = FACTS_SCHEMA
    collected_at: str = ""
    settings: SettingsFacts | None = None
    endpoint: EndpointFacts | None = None
    logs: LogFacts | None = None
    deployment: EngineConfig | None = None
    model: ModelFacts | None = None
    gpus: GpuFacts | None = None
    host: HostFacts | None = None
    metrics: MetricsFacts | None = None
    plan: MemoryPlan | None = None
    cluster: ClusterFacts | None = None  # per-node facts of a Ray cluster (run --ray)
    gate: GateFacts | None = None  # the pipeline's requirements and where each option came from
    ready: ReadyFacts | None = None  # what --wait-ready saw while the server was starting
    notes: list[str] = field(default_factory=list)
    gaps: list[InputGap] = field(default_factory=list)  # input not read in full (doctor.input_incomplete)
    stated: list[PerfStatement] = field(default_factory=list)  # perf symptoms a person states in words
    said: list[FailureStatement] = field(default_factory=list)  # load/access failures a person states in words
    guessed: list[WordedGuess] = field(default_factory=list)  # codes a failure report's words lean to (doctor/logparse/worded.py)

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Facts:
        return from_dict(cls, data)


def to_dict(obj: Any) -> Any:
    """Dataclasses -> plain JSON-able values (dicts, lists, scalars)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


class SchemaError(ValueError):
    """A value of the wrong type for its field; `field` is its path, like `gpus.gpus[3].index`."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field or '(top)'}: {message}")
        self.field = field


def from_dict(cls: type[T], data: Any) -> T:
    """Plain values -> the typed dataclass tree, driven by the type hints and checked against them
    (a wrong type raises SchemaError naming the field); unknown keys are ignored so that a bundle
    written by a newer version still loads."""
    return _build(cls, data, "")


SCALARS: dict[type, tuple[type, ...]] = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}


def _build(tp: Any, data: Any, path: str) -> Any:
    if data is None:
        return None
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        for arg in args[:-1]:
            try:
                return _build(arg, data, path)
            except SchemaError:
                continue
        return _build(args[-1], data, path)
    if origin in (list, tuple):
        (arg, *_) = get_args(tp) or (Any,)
        _expect(data, list, path, "a list")
        return [_build(arg, x, f"{path}[{i}]") for i, x in enumerate(data)]
    if origin is dict:
        _, val = get_args(tp) or (str, Any)
        _expect(data, dict, path, "an object")
        return {k: _build(val, v, f"{path}.{k}") for k, v in data.items()}
    if origin is typing.Literal or tp is Any:
        return data
    if dataclasses.is_dataclass(tp):
        _expect(data, dict, path, "an object")
        hints = get_type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp) if f.init}
        prefix = f"{path}." if path else ""
        return tp(**{k: _build(hints[k], v, prefix + k) for k, v in data.items() if k in names})
    if tp in SCALARS:
        ok = isinstance(data, SCALARS[tp]) and (tp is bool or not isinstance(data, bool))
        if not ok:
            raise SchemaError(path, f"expected {tp.__name__}, got {type(data).__name__} {_short(data)}")
        return float(data) if tp is float else data
    return data


def _expect(data: Any, kind: type, path: str, what: str) -> None:
    if not isinstance(data, kind):
        raise SchemaError(path, f"expected {what}, got {type(data).__name__} {_short(data)}")


def _short(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 40 else text[:37] + "..."
