"""What `baseline record` and `baseline compare` do between parsing flags and printing.

Exit codes as everywhere: 0 nothing at or above --fail-on; 1 something is (record: the recording
is incomplete, or nothing answered); 2 usage (bad flags, an unreadable request set or baseline
file); 3 the doctor itself failed.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from llm_doctor.baseline.model import Baseline, BaselineFileError, Run, load
from llm_doctor.redact import Redactor


def record_command(kw: dict[str, Any]) -> int:
    from llm_doctor import settings as settings_mod
    from llm_doctor.baseline import requests
    from llm_doctor.collect.baseline import RecordOptions, record
    from llm_doctor.engine import Deadline

    try:
        settings = settings_mod.resolve(kw["base_url"], kw["api_key"], None, kw["protocol"],
                                        api_key_env=kw["api_key_env"], api_key_file=kw["api_key_file"])  # fmt: skip
    except settings_mod.KeyFileError as exc:
        raise click.UsageError(str(exc)) from None
    redactor = Redactor([settings.api_key.value, os.environ.get("HF_TOKEN")])
    models = list(dict.fromkeys(kw["models"])) or ([settings.model.value] if settings.model.value else [])
    if not settings.base_url.value:
        raise click.UsageError("no endpoint: give --base-url or set OPENAI_BASE_URL")
    if not models:
        raise click.UsageError("no model: give --model (repeatable) or set OPENAI_MODEL")
    if settings.protocol.value == "anthropic":
        raise click.UsageError("baseline record speaks the OpenAI-compatible chat API; give --protocol openai and its base URL")
    try:
        rset = requests.load(kw["prompts"]) if kw["prompts"] else requests.builtin()
    except requests.RequestSetError as exc:
        raise click.UsageError(str(exc)) from None
    opts = RecordOptions(models=models, repeat=kw["repeat"], concurrency=kw["concurrency"], timeout=kw["timeout"],
                         seed=kw["seed"], metrics_url=kw["metrics_url"], logs=list(kw["logs"]))  # fmt: skip
    try:
        with progress_bar() as bar:
            baseline = record(settings, rset, opts, Deadline(kw["deadline"]), bar)
        answered = sum(1 for run in baseline.runs for r in run.requests if r.e2e_ms)
        if not answered:
            first = baseline.problems[0] if baseline.problems else "no answer"
            sys.stderr.write(redactor.text(f"llm-doctor baseline: no request was answered ({first}); nothing written. "
                                           "Check access first: llm-doctor run --only access\n"))  # fmt: skip
            return 1
        Path(kw["output"]).write_text(baseline.dumps(redactor), encoding="utf-8")
    except Exception as exc:  # the doctor itself failed: exit 3, a message, no traceback
        sys.stderr.write(redactor.text(f"llm-doctor failed: {type(exc).__name__}: {exc}\n"))
        return 3
    sys.stdout.write(redactor.text(summary(baseline, kw["output"])))
    if not baseline.complete:
        sys.stderr.write(redactor.text("incomplete recording:\n" + "".join(f"  {p}\n" for p in baseline.problems)))
        return 1
    return 0


def summary(b: Baseline, path: str) -> str:
    from llm_doctor.baseline.compare import summarise

    lines = [f"recorded {b.request_set.get('name')} ({len(b.runs[0].requests)} requests x {b.options.get('repeat')}) "
             f"against {b.base_url} -> {path}"]  # fmt: skip
    for run in b.runs:
        s = summarise(run, run.model, {r.id for r in run.requests})
        ttft, itl = s.latency["ttft_ms"][0], s.latency["itl_ms"][0]
        tps = ", ".join(f"{v:.1f} at {k}" for k, v in sorted(s.tokens_per_s.items())) or "-"
        quality = f"{s.right}/{s.scored}" if s.scored else "-"
        kv = f"{s.kv_cache_tokens:,}" if s.kv_cache_tokens else "-"
        lines.append(f"  {run.model}: TTFT p50 {_ms(ttft)}, ITL p50 {_ms(itl)}, tokens/s {tps}, KV cache tokens {kv}, "
                     f"quality {quality}")  # fmt: skip
    return "\n".join(lines) + "\n"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


@contextlib.contextmanager
def progress_bar() -> Iterator[Any]:
    """A progress bar on stderr while requests run (TTY only; pipelines get none)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True, no_color="NO_COLOR" in os.environ)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("starting", total=None)
        yield lambda what, done, total: bar.update(task, description=what, completed=done, total=total)


@dataclass
class Plan:
    """What `compare` does with its files: the (before, after) pairs, the runs to rank, notes."""

    pairs: list[tuple[Run, Run, str, str]] = field(default_factory=list)  # before, after, their labels
    ranked: list[tuple[str, Run]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def plan(paths: tuple[str, ...], files: list[Baseline]) -> Plan:
    """Two files: their runs paired by model (or the only run of each). One file of several
    models, or more than two files: every run against the first one, and all ranked."""
    if len(files) == 2:
        (pb, fb), (pa, fa) = zip(paths, files, strict=True)
        nb, na = Path(pb).name, Path(pa).name
        if len(fb.runs) == 1 and len(fa.runs) == 1:
            return Plan([(fb.runs[0], fa.runs[0], nb, na)])
        by_model = {r.model: r for r in fa.runs}
        out = Plan([(r, by_model[r.model], f"{nb}:{r.model}", f"{na}:{r.model}") for r in fb.runs if r.model in by_model])
        unpaired = sorted({r.model for r in fb.runs} ^ {r.model for r in fa.runs})
        if unpaired:
            out.notes.append(f"recorded in only one file, not compared: {', '.join(unpaired)}")
        return out
    runs = [(f"{Path(p).name}:{r.model}" if len(files) > 1 else r.model, r) for p, f in zip(paths, files, strict=True) for r in f.runs]
    (ref_label, ref), rest = runs[0], runs[1:]
    return Plan([(ref, run, ref_label, label) for label, run in rest], runs)


def _check_row(c: Any, tolerance: float) -> Any:
    """One row per comparison in the checks table (and one JUnit testcase), so a CI system shows
    the verdict natively: fail on an error finding, warn on a warning."""
    from llm_doctor.engine import CheckResult

    severities = {f.severity for f in c.findings}
    status = "fail" if "error" in severities else "warn" if "warn" in severities else "pass"
    named = ", ".join(dict.fromkeys(f.code.split(".", 1)[1] for f in c.findings if f.severity != "info"))
    detail = f"{c.before.label} -> {c.after.label}: " + (named or f"nothing beyond the {tolerance:.0%} tolerance and the noise")
    return CheckResult("baseline.compare", "baseline", status, detail=detail, findings=list(c.findings))


def compare_command(paths: tuple[str, ...], kw: dict[str, Any]) -> int:
    from llm_doctor.baseline import compare, render
    from llm_doctor.facts import Facts
    from llm_doctor.report import Report, rank
    from llm_doctor.report.render import render as render_report

    try:
        files = [load(p) for p in paths]
    except BaselineFileError as exc:
        raise click.UsageError(str(exc)) from None
    if sum(len(f.runs) for f in files) < 2:
        raise click.UsageError("compare needs two recordings: two files, or one recorded with several --model")
    redactor = Redactor([os.environ.get("OPENAI_API_KEY"), os.environ.get("HF_TOKEN")])
    try:
        todo = plan(paths, files)
        by_run = {id(r): f for f in files for r in f.runs}
        comparisons = [
            compare.compare(b, a, kw["tolerance"], (lb, la), (by_run[id(b)], by_run[id(a)])) for b, a, lb, la in todo.pairs
        ]
        findings, notes = [], list(todo.notes)
        for c in comparisons:
            for f in c.findings:
                if todo.ranked or len(comparisons) > 1:
                    f.title = f"{c.after.label} vs {c.before.label}: {f.title}"
                f.check = "baseline.compare"
                findings.append(f)
            notes += c.notes
        checks = [_check_row(c, kw["tolerance"]) for c in comparisons]
        report = Report(rank(findings), checks, Facts(), title=f"llm-doctor baseline compare {' '.join(Path(p).name for p in paths)}")
        for c in comparisons:
            report.extra_sections.append((f"{c.before.label} -> {c.after.label}", render.table(c)))
        if todo.ranked:
            ids = set.intersection(*({r.id for r in run.requests} for _, run in todo.ranked))
            summaries = [compare.summarise(run, label, ids) for label, run in todo.ranked]
            report.extra_sections.append(("Ranking (1 = best)", render.ranking(summaries)))
        notes = list(dict.fromkeys(notes))
        if notes:
            report.extra_sections.append(("Notes", "\n".join(notes)))
        incomplete = [f"{Path(p).name}: {q}" for p, f in zip(paths, files, strict=True) if not f.complete for q in f.problems]
        if incomplete:
            report.extra_sections.append(("Incomplete recordings (the gate fails unless --fail-on never)", "\n".join(incomplete)))
        if kw["fmt"] == "json":
            data = redactor.obj(report.to_json())
            data["facts"] = {}  # a comparison collects no facts; the figures are under "baseline"
            data["baseline"] = {"comparisons": [render.as_json(c) for c in comparisons], "notes": notes, "incomplete": incomplete}
            if incomplete and data["status"] == "ok":
                data["status"] = "incomplete"
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        else:
            from llm_doctor.cli import color_wanted

            text = render_report(report, kw["fmt"], redactor, color=color_wanted(kw["fmt"], kw["output"]))
        if kw["output"]:
            Path(kw["output"]).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
    except Exception as exc:
        sys.stderr.write(redactor.text(f"llm-doctor failed: {type(exc).__name__}: {exc}\n"))
        return 3
    code = report.exit_code(kw["fail_on"])
    return 1 if incomplete and kw["fail_on"] != "never" else code
