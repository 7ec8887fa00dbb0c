"""Collectors: the ONLY code that touches the world (network, files, NVML, processes, Ray).

`collect_run` gathers live facts for `llm-doctor run`; `llm_doctor.collect.files.load_paths` reads
saved artefacts for `analyze`. Each collector is guarded: one that fails leaves a note and its
section empty, and the checks that need it are skipped, never passed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from llm_doctor.engine import Deadline
from llm_doctor.facts import Facts
from llm_doctor.facts.inputs import InputGap
from llm_doctor.settings import Settings

Progress = Callable[[str, str], None]  # (layer, message)


@dataclass
class RunOptions:
    layers: tuple[str, ...] = ("access", "load", "perf")
    timeout: float = 10.0
    ca_bundle: str | None = None
    insecure: bool = False
    logs: list[str] = field(default_factory=list)
    docker: str | None = None
    k8s: str | None = None
    namespace: str | None = None
    previous: bool = False
    metrics_url: str | None = None
    sample: float = 3.0
    probe_load: int = 0
    ray: str | None = None


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def guarded(facts: Facts, name: str, fn: Callable[[], Any]) -> Any:
    """Run one collector; a failure is a gap in the input (doctor.input_incomplete), never a traceback."""
    try:
        return fn()
    except Exception as exc:
        facts.notes.append(f"{name} collector failed: {type(exc).__name__}: {exc}")
        facts.gaps.append(InputGap(name, f"the collector failed ({type(exc).__name__}: {exc}); its facts are missing"))
        return None


def collect_run(settings: Settings, opts: RunOptions, deadline: Deadline, progress: Progress | None = None) -> Facts:
    say = progress or (lambda layer, msg: None)
    facts = Facts(collected_at=now(), settings=settings.to_facts())
    if "access" in opts.layers:
        from llm_doctor.collect import endpoint

        say("access", f"probing {settings.base_url.value or 'endpoint'}")
        facts.endpoint = guarded(facts, "endpoint", lambda: endpoint.probe(settings, opts, deadline, say))
    if opts.logs or opts.docker or opts.k8s:
        from llm_doctor.collect import logs

        say("load", "reading engine logs")
        guarded(facts, "logs", lambda: logs.collect(opts.logs, opts.docker, opts.k8s, opts.namespace, opts.previous, facts, deadline))
    if opts.ray:
        from llm_doctor.collect import ray_cluster

        say("load", f"collecting from every node of the Ray cluster {opts.ray}")
        models = tuple(m for m in dict.fromkeys((settings.model.value or "", facts.deployment.model if facts.deployment else "")) if m)
        facts.cluster = guarded(facts, "ray", lambda: ray_cluster.collect(opts.ray, opts.sample, deadline, models))
    if "load" in opts.layers or "perf" in opts.layers:
        from llm_doctor.collect import live

        guarded(facts, "live", lambda: live.collect(facts, settings, opts, deadline, say))
    return facts
