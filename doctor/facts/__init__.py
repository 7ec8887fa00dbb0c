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

from doctor.facts.access import EndpointFacts, SettingsFacts
from doctor.facts.cluster import ClusterFacts
from doctor.facts.deployment import EngineConfig
from doctor.facts.gpu import GpuFacts
from doctor.facts.host import HostFacts
from doctor.facts.inputs import InputGap
from doctor.facts.logs import LogFacts
from doctor.facts.metrics import MetricsFacts
from doctor.facts.model import ModelFacts
from doctor.facts.plan import MemoryPlan

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
    notes: list[str] = field(default_factory=list)
    gaps: list[InputGap] = field(default_factory=list)  # input not read in full (doctor.input_incomplete)

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


def from_dict(cls: type[T], data: Any) -> T:
    """Plain values -> the typed dataclass tree, driven by the type hints; unknown keys are ignored
    so that a bundle written by a newer version still loads."""
    return _build(cls, data)


def _build(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return _build(args[0], data) if len(args) == 1 else data
    if origin in (list, tuple):
        (arg, *_) = get_args(tp) or (Any,)
        return [_build(arg, x) for x in data]
    if origin is dict:
        _, val = get_args(tp) or (str, Any)
        return {k: _build(val, v) for k, v in data.items()}
    if origin is typing.Literal or tp is Any:
        return data
    if dataclasses.is_dataclass(tp):
        hints = get_type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp) if f.init}
        return tp(**{k: _build(hints[k], v) for k, v in data.items() if k in names})
    if tp is float and isinstance(data, int):
        return float(data)
    return data
