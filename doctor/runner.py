"""What `run` and `analyze` do between parsing flags and printing: collect, check, rank, render.

Both end in `finish`, so a saved bundle analysed offline goes through exactly the checks and
the report a live run does.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from doctor.cli import LAYER_NAMES, _csv, color_wanted
from doctor.collect.logs import InputError
from doctor.engine import CheckSpec, Deadline, UnknownSelection, load_checks, run_checks, select
from doctor.facts import Facts
from doctor.redact import Redactor


def run_command(kw: dict[str, Any]) -> int:
    from doctor import settings as settings_mod
    from doctor.collect import RunOptions, collect_run

    try:
        deadline = Deadline(float(kw["deadline"]))
        settings = settings_mod.resolve(
            kw["base_url"], kw["api_key"], kw["model"], kw["protocol"], ca_bundle=kw["ca_bundle"]
        )
        redactor = Redactor([settings.api_key.value, os.environ.get("HF_TOKEN")])
        only = _csv(kw["only"])
        specs = selected(kw)
        from doctor.collect.logs import check_named

        check_named(list(kw["logs"]))
        opts = RunOptions(
            layers=_layers(only),
            timeout=float(kw["timeout"]),
            ca_bundle=kw["ca_bundle"],
            insecure=bool(kw["insecure"]),
            logs=list(kw["logs"]),
            docker=kw["docker"],
            k8s=kw["k8s"],
            namespace=kw["namespace"],
            previous=bool(kw["previous"]),
            metrics_url=kw["metrics_url"],
            sample=float(kw["sample"]),
            probe_load=int(kw["probe_load"]),
            ray=kw["ray_address"],
        )
        with live_status(kw["fmt"], kw["output"]) as say:
            facts = collect_run(settings, opts, deadline.reserving(), say)
            return finish(facts, specs, kw, redactor, deadline, title="llm-doctor run", say=say)
    except (UnknownSelection, InputError) as exc:
        raise click.UsageError(str(exc)) from None
    except Exception as exc:  # the doctor itself failed: exit 3, with a message and no traceback
        return doctor_failed(exc, locals().get("redactor") or Redactor())


def analyze_command(paths: tuple[str, ...], kw: dict[str, Any]) -> int:
    from doctor.collect.files import load_paths

    redactor = Redactor([os.environ.get("HF_TOKEN"), os.environ.get("OPENAI_API_KEY")])
    try:
        deadline = Deadline(float(kw["deadline"]))
        specs = selected(kw)
        facts = load_paths(list(paths), deadline.reserving())
        return finish(facts, specs, kw, redactor, deadline, title="llm-doctor analyze")
    except (UnknownSelection, InputError) as exc:
        raise click.UsageError(str(exc)) from None
    except Exception as exc:
        return doctor_failed(exc, redactor)


def _layers(only: tuple[str, ...]) -> tuple[str, ...]:
    """Which layers' collectors to run: those named in --only, or the layers of checks named."""
    if not only:
        return LAYER_NAMES
    return tuple(layer for layer in LAYER_NAMES if any(o == layer or o.startswith(layer + ".") for o in only))


def selected(kw: dict[str, Any]) -> list[CheckSpec]:
    """The checks --only/--skip ask for; a name that is neither a layer nor a check is a usage error."""
    return select(load_checks(), _csv(kw["only"]), _csv(kw["skip"]))


def finish(facts: Facts, specs: list[CheckSpec], kw: dict[str, Any], redactor: Redactor, deadline: Deadline, title: str,
           say: Any = None) -> int:
    from doctor.report import build_report
    from doctor.report.render import render

    on_layer = (lambda layer: say(layer, "checking")) if say else None
    results = run_checks(facts, specs, deadline, on_layer=on_layer)
    report = build_report(results, facts, title=title)
    if kw.get("save_bundle"):
        Path(kw["save_bundle"]).write_text(json.dumps(redactor.obj(facts.to_dict()), indent=2) + "\n")
    text = render(report, kw["fmt"], redactor, color=color_wanted(kw["fmt"], kw["output"]), fail_on=kw["fail_on"])
    if kw["output"]:
        Path(kw["output"]).write_text(text)
    else:
        sys.stdout.write(text)
    return report.exit_code(kw["fail_on"])


@contextlib.contextmanager
def live_status(fmt: str, output: str | None) -> Iterator[Any]:
    """A live status line per layer on stderr while collectors and checks run (TTY only).

    stdout is never redirected into the display: the report (JSON for `> out.json` or `| jq`)
    must reach stdout whole and unwrapped while the status line is still on the terminal."""
    if not sys.stderr.isatty():
        yield lambda layer, msg: None
        return
    from rich.console import Console
    from rich.live import Live
    from rich.spinner import Spinner

    console = Console(stderr=True, no_color="NO_COLOR" in os.environ)
    spinner = Spinner("dots", "starting")
    with Live(spinner, console=console, transient=True, redirect_stdout=False, redirect_stderr=False):
        yield lambda layer, msg: spinner.update(text=f"[bold]{layer}[/bold]: {msg}")


def doctor_failed(exc: BaseException, redactor: Redactor) -> int:
    sys.stderr.write(redactor.text(f"llm-doctor failed: {type(exc).__name__}: {exc}\n"))
    return 3
