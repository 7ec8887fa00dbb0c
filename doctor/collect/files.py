"""Read saved artefacts for `analyze`: bundles, logs and tool outputs, each recognised by its
content (not its name), all combined into one Facts.

A reader is (kind, sniff, load): `sniff(head)` looks at the first bytes of a file; `load(path,
facts, deadline)` streams the file into the facts. The first reader whose sniff says yes wins;
engine logs are the fallback. Folders are walked for *.log, *.txt, *.out, *.json and *.gz.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from llm_doctor.collect import now
from llm_doctor.collect.logs import InputError
from llm_doctor.engine import Deadline
from llm_doctor.facts import FACTS_SCHEMA, Facts
from llm_doctor.facts.deployment import EngineConfig
from llm_doctor.facts.inputs import InputGap

SNIFF_BYTES = 64 * 1024
WALK_SUFFIXES = {".log", ".txt", ".out", ".json", ".gz", ".xml"}


@dataclass(frozen=True)
class Reader:
    kind: str
    sniff: Callable[[str], bool]
    load: Callable[[str, Facts, Deadline], None]


MAX_BUNDLE_BYTES = 64 * 1024 * 1024
MAX_BUNDLE_DEPTH = 64  # the facts tree is about 8 deep; free-form values (env, extra) get the rest
REPORT_SCHEMA = "llm-doctor.report/"
# a JSON object that names an llm-doctor schema, or whose first key is "schema" (as --save-bundle writes it)
BUNDLE_HEAD = re.compile(r'\A\s*\{\s*"schema"\s*:|"schema"\s*:\s*"llm-doctor\.')


class BadBundle(InputError):
    """A bundle that cannot be read as one: a usage error (exit 2), naming the file and the field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: not a readable llm-doctor bundle: {message}")


def _is_bundle(head: str) -> bool:
    return head.lstrip().startswith("{") and bool(BUNDLE_HEAD.search(head[:4096]))


def read_bundle(path: str) -> Facts:
    """The bundle at `path`, checked against the schema: its version, size, nesting depth and the
    type of every field. Raises BadBundle naming the field; never reads a bad bundle as a log."""
    from llm_doctor.facts import SchemaError

    size = Path(path).stat().st_size
    if size > MAX_BUNDLE_BYTES:
        raise BadBundle(path, f"{size} bytes; a bundle is at most {MAX_BUNDLE_BYTES} bytes")
    try:
        data = json.loads(_read_maybe_gzip(path).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadBundle(path, f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise BadBundle(path, f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}; cut short?)") from None
    except RecursionError:
        raise BadBundle(path, "JSON nested too deeply to read") from None
    _check_depth(path, data)
    if isinstance(data, dict) and str(data.get("schema", "")).startswith(REPORT_SCHEMA) and isinstance(data.get("facts"), dict):
        data = data["facts"]  # a --format json report carries the facts it judged
    if not isinstance(data, dict):
        raise BadBundle(path, f"expected a JSON object, got {type(data).__name__}")
    if data.get("schema") != FACTS_SCHEMA:
        raise BadBundle(path, f"field schema: {data.get('schema')!r} is not {FACTS_SCHEMA!r}, the bundle version this llm-doctor reads")
    try:
        return Facts.from_dict(data)
    except SchemaError as exc:
        raise BadBundle(path, f"field {exc}") from None


def _read_maybe_gzip(path: str) -> bytes:
    import gzip

    with open(path, "rb") as fh:
        raw = fh.read(MAX_BUNDLE_BYTES + 1)
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as gz:
                raw = gz.read(MAX_BUNDLE_BYTES + 1)
        except (OSError, EOFError) as exc:
            raise BadBundle(path, f"a broken gzip file ({exc})") from None
    if len(raw) > MAX_BUNDLE_BYTES:
        raise BadBundle(path, f"more than {MAX_BUNDLE_BYTES} bytes; a bundle is at most that")
    return raw


def _check_depth(path: str, data: object) -> None:
    """Iteratively, so a hostile nesting cannot exhaust the stack of the checks that read it later."""
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_BUNDLE_DEPTH:
            raise BadBundle(path, f"nested more than {MAX_BUNDLE_DEPTH} levels deep")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def _load_bundle(path: str, facts: Facts, deadline: Deadline) -> None:
    loaded = read_bundle(path)
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


# GPU and engine artefacts (perf helper): nvidia-smi table / -q / -q -x / nvlink, topo -m, dmon / gpustat, /metrics, launch command
READERS += [
    Reader("nvidia-smi -q -x", _sniff("llm_doctor.logparse.nvidia_smi", "is_xml"), _lazy("llm_doctor.collect.gpu", "load_xml")),
    Reader("nvidia-smi -q", _sniff("llm_doctor.logparse.nvidia_smi", "is_query"), _lazy("llm_doctor.collect.gpu", "load_query")),
    Reader("nvidia-smi", _sniff("llm_doctor.logparse.nvidia_smi", "is_table"), _lazy("llm_doctor.collect.gpu", "load_table")),
    Reader("nvidia-smi nvlink", _sniff("llm_doctor.logparse.nvidia_smi", "is_nvlink_status"), _lazy("llm_doctor.collect.gpu", "load_nvlink")),
    Reader("nvidia-smi topo", _sniff("llm_doctor.logparse.topo", "looks_like_topo"), _lazy("llm_doctor.collect.gpu", "load_topo")),
    Reader("GPU monitor", _sniff("llm_doctor.logparse.gpu_monitors", "is_monitor"), _lazy("llm_doctor.collect.gpu", "load_monitor")),
    Reader("metrics", _sniff("llm_doctor.logparse.metrics_text", "looks_like_metrics"), _lazy("llm_doctor.collect.metrics", "load_scrape")),
    Reader("command line", _sniff("llm_doctor.collect.host", "looks_like_command"), _lazy("llm_doctor.collect.host", "load_command")),
    Reader("ray status", _sniff("llm_doctor.logparse.ray_status", "looks_like_ray_status"), _lazy("llm_doctor.collect.ray_paste", "load_status")),
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


def _embedded(path: str, facts: Facts) -> set[str]:
    """Tool output pasted inside the text: GPU artefacts (doctor.collect.gpu.embedded_in), Python
    code that starts an engine, an engine container's spec, a serving-benchmark sweep, another
    benchmark tool's summary, a `top` screen, a `ray status`, an nccl-tests run, a benchmark table comparing TP sizes. The head of the log is read once for all of them.
    The names of those read."""
    from llm_doctor.collect.gpu import EMBEDDED_BYTES, _read_text, embedded_in
    from llm_doctor.collect.ray_paste import status_in
    from llm_doctor.logparse import nccl_tests, perf_prose, tp_compare

    try:
        text = _read_text(path, EMBEDDED_BYTES)
    except (OSError, EOFError):  # a cut .gz or an unreadable file: the log reader already said so
        return set()
    readers = {"gpu": embedded_in(text, facts), LAUNCH_CODE: _launch_code(text, facts), CONTAINER_SPEC: _container_spec(text, facts),
               "bench sweep": _bench_sweep(path, text, facts), "bench tool": _bench_tool(path, text, facts), "top": _top(text, facts),
               "ray status": status_in(path, text, facts), "nccl-tests": nccl_tests.into_facts(path, text, facts),
               "perf prose": perf_prose.into_facts(path, text, facts), "tp comparison": tp_compare.into_facts(path, text, facts)}
    return {name for name, read in readers.items() if read}


def _said(path: str, facts: Facts, tool_output: bool = False) -> None:
    """The load and access failures a person states in the text (doctor.logparse.failure_prose) ->
    facts.said. A text of nothing but such sentences stays a gap: no output the doctor reads shows
    them, so the report is never an all-clear on them and says what to pass."""
    from llm_doctor.collect.gpu import _read_text
    from llm_doctor.logparse import failure_prose, worded

    if path == "-":
        return
    try:
        text = _read_text(path, failure_prose.HEAD_BYTES)
    except (OSError, EOFError):
        return
    failure_prose.into_facts(path, text, facts)
    if not tool_output:  # (a tool's report, nvidia-smi -q, is no person's report of a failure; a pasted command heads one)
        worded.into_facts(path, text, facts)  # (reported only where nothing else is found: doctor/guessed.py)


def _launch_code(text: str, facts: Facts) -> bool:
    """`LLM(model, tensor_parallel_size=8, ...)` in the text -> facts.deployment."""
    from llm_doctor.logparse import launch_code

    return _deployed(launch_code.config(text), facts)


def _container_spec(text: str, facts: Facts) -> bool:
    """An engine container's `command:`/`args:` in a compose file or manifest, or a recipe's `vllm_args:`
    list -> facts.deployment."""
    from llm_doctor.engine_args import parse_command
    from llm_doctor.logparse import container_spec

    found = container_spec.commands(text) or container_spec.engine_arg_lists(text)
    return _deployed(parse_command(found[-1], source="cmdline") if found else None, facts)


def _deployed(cfg: EngineConfig | None, facts: Facts) -> bool:
    """A config read from a paste into facts.deployment; arguments a log printed (what really ran)
    win over it."""
    from llm_doctor import models

    if cfg is None or not cfg.engine:
        return False
    logged = facts.deployment is not None and facts.deployment.engine == cfg.engine
    facts.deployment = facts.deployment.merge(cfg) if logged and facts.deployment else cfg
    if facts.model is None and facts.deployment.model:
        try:
            facts.model = models.known(facts.deployment.model)
        except (OSError, ValueError, KeyError):
            facts.model = None
    return True


def _bench_sweep(path: str, text: str, facts: Facts) -> bool:
    """Serving-benchmark runs at concurrency 1 and N (doctor.logparse.bench_runs) -> the load
    probe's facts, unless a real probe ran."""
    from llm_doctor.facts.host import HostFacts, ProbeFacts
    from llm_doctor.logparse import bench_runs

    found = bench_runs.sweep(bench_runs.runs(text))
    tabled = found is None and (found := bench_runs.sweep(bench_runs.table_runs(text))) is not None
    if found is None or (facts.host is not None and facts.host.probe is not None):
        return False
    low, high = found
    where = f"{path}:{low.line} and :{high.line}" + (" (the rows of a table)" if tabled else "")
    probe = ProbeFacts(concurrency=high.concurrency, tps_1=low.output_tps, tps_n=high.output_tps,
                       requests=low.requests + high.requests,
                       notes=[f"measured by the pasted serving-benchmark runs at max concurrency 1 and {high.concurrency} ({where})"])
    if facts.host is None:
        facts.host = HostFacts()
    facts.host.probe = probe
    return True


def _bench_tool(path: str, text: str, facts: Facts) -> bool:
    """A benchmark tool's summary (doctor.logparse.bench_tools: GenAI-Perf, llmperf, TGI's and
    SGLang's benchmarks, llama-bench, `ollama run --verbose`) -> its TTFT and inter-token latency
    as log metrics, which fill only what the engine's own lines did not."""
    from llm_doctor.logparse import bench_tools, stat_lines

    found = bench_tools.metrics(text, path)
    stat_lines.into_facts(facts, found)
    return found is not None


def _top(text: str, facts: Facts) -> bool:
    """A `top` screen (doctor.logparse.top) -> host CPU facts and the engine processes it lists;
    what the live collector measured stays."""
    from llm_doctor.facts.host import EngineProcess, HostFacts
    from llm_doctor.logparse import top

    snap = top.parse(text)
    if snap is None:
        return False
    host = facts.host = facts.host or HostFacts()
    host.load_avg_1m = host.load_avg_1m if host.load_avg_1m is not None else snap.load_avg_1m
    host.cpu_percent = host.cpu_percent if host.cpu_percent is not None else snap.cpu_busy_percent
    host.cpu_count = host.cpu_count or snap.cpu_count
    known = {p.pid for p in host.processes}
    host.processes += [EngineProcess(t.pid, t.engine, cmdline=t.command, cpu_percent=t.cpu_percent)
                       for t in snap.tasks if t.pid not in known]
    return True


def load_paths(paths: list[str], deadline: Deadline) -> Facts:
    from llm_doctor.collect import logs

    facts = Facts(collected_at=now())
    logs.check_named(paths)
    declared = False  # a launch written as code or a container spec: a configuration handed over to be judged as one
    expanded = logs.expand(paths, WALK_SUFFIXES)
    for path in expanded:
        named = path in paths
        try:
            head = "" if path == "-" else head_of(path)
        except OSError as exc:  # a file in a folder that vanished or cannot be read: the rest goes on
            facts.gaps.append(InputGap(path, f"cannot read ({exc.strerror or exc})"))
            continue
        reader = next((r for r in READERS if path != "-" and r.sniff(head)), None)
        if reader is None:
            logs.load_log(path, facts, deadline, named=named)
            read = _embedded(path, facts) if path != "-" else set()
            if read:  # topo -m after the engine's output, a dmon paste
                facts.gaps = [g for g in facts.gaps if not (g.source == path and g.reason == logs.NOT_UNDERSTOOD)]
            _said(path, facts)
        else:
            reader.load(path, facts, deadline)
            read = set()
            if reader.kind != "bundle":  # tool output pasted into a log: the engine's errors count too
                logs.load_log(path, facts, deadline, only_if_events=True)
                read = _embedded(path, facts)
                _said(path, facts, tool_output=reader.kind != "command line")
        declared = declared or bool(read & CONFIGURATIONS)
    # (the heads are read again only here, where a launch command is all that was understood: log records in some
    # file, levels, timestamps, process tags, are the run's own output)
    if facts.deployment is not None and not declared and not _run_shown(facts) and not any(map(logs.log_shaped, expanded)):
        facts.gaps.append(InputGap(", ".join(paths), NO_RUN_OUTPUT, unless_judged=True))
    return facts


LAUNCH_CODE, CONTAINER_SPEC = "launch code", "container spec"
CONFIGURATIONS = {LAUNCH_CODE, CONTAINER_SPEC}
# a launch command pasted into a text says how the engine was started, not how the run went: an all-clear
# on it alone would vouch for a run nobody has seen (a thread's `docker run ...` and an environment dump
# above "it fails"). Code and manifests are configurations handed over to be judged as such.
NO_RUN_OUTPUT = ("it holds how the engine was launched but nothing the run printed (no engine or client log line, error, "
                 "stat line, metrics or GPU reading), so how the run went could not be judged: pass the log of that launch")


def _run_shown(facts: Facts) -> bool:
    """Something of the run itself was read: a log line a rule knows, a start-up, GPU or host readings,
    metrics or a benchmark, a cluster's status, or a symptom or failure a person states. Versions read
    from an environment dump say what was installed, not what happened."""
    read = facts.logs is not None and bool(facts.logs.events or facts.logs.started or facts.logs.ready)
    return read or any((facts.gpus, facts.host, facts.metrics, facts.cluster, facts.stated, facts.said))
