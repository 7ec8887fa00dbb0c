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

from llm_doctor.cli import LAYER_NAMES, _csv, color_wanted
from llm_doctor.collect.logs import InputError
from llm_doctor.engine import CheckSpec, Deadline, UnknownSelection, load_checks, run_checks, select
from llm_doctor.facts import Facts
from llm_doctor.redact import Redactor


def run_command(kw: dict[str, Any]) -> int:
    from llm_doctor import settings as settings_mod
    from llm_doctor.collect import RunOptions, collect_run

    try:
        settings = settings_mod.resolve(
            kw["base_url"], kw["api_key"], kw["model"], kw["protocol"], ca_bundle=kw["ca_bundle"],
            given=from_config(kw), api_key_env=kw["api_key_env"], api_key_file=kw["api_key_file"],
        )  # fmt: skip
        settings.key_on_command_line = kw["api_key"] is not None  # only the flag sets it: the file names a variable or a file
        redactor = Redactor([settings.api_key.value, os.environ.get("HF_TOKEN")])
        ready = wait_ready(settings, kw, redactor) if kw["wait_ready"] else None
        deadline = Deadline(float(kw["deadline"]))  # starts when the server is up: waiting is not diagnosing
        only = _csv(kw["only"])
        specs = selected(kw)
        from llm_doctor.collect.logs import check_named

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
            facts.ready = ready
            return finish(facts, specs, kw, redactor, deadline, title="llm-doctor run", say=say)
    except (UnknownSelection, InputError, settings_mod.KeyFileError) as exc:
        raise click.UsageError(str(exc)) from None
    except click.UsageError:
        raise
    except Exception as exc:  # the doctor itself failed: exit 3, with a message and no traceback
        return doctor_failed(exc, locals().get("redactor") or Redactor())


def from_config(kw: dict[str, Any]) -> dict[str, str]:
    """Where the settings given to `resolve` came from, for those the configuration file set."""
    from llm_doctor.config import OPTIONS

    gate = kw.get("gate")
    return {OPTIONS[v.name]: f"{v.source} {v.name}" for v in (gate.values if gate else []) if v.source.startswith("file ") and v.name in OPTIONS}


def wait_ready(settings: Any, kw: dict[str, Any], redactor: Redactor) -> Any:
    """Poll the endpoint until it answers (--wait-ready), saying on stderr what it sees."""
    from llm_doctor.collect import net, ready

    if not settings.base_url.value:
        raise click.UsageError("--wait-ready needs the endpoint: --base-url, or `endpoint` in llm-doctor.toml")
    verify = net.ssl_context(settings.ca_bundle.value, bool(kw["insecure"]))
    say = lambda msg: click.echo(redactor.text(f"wait-ready: {msg}"), err=True)  # noqa: E731
    gone = ready.container_gone(kw["docker"], kw["k8s"], kw["namespace"])
    return ready.wait(settings.base_url.value, settings.api_key.value, float(kw["wait_ready"]), verify, say, gone)


def analyze_command(paths: tuple[str, ...], kw: dict[str, Any]) -> int:
    from llm_doctor.collect.files import load_paths

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
    """The checks --only/--skip ask for; a name that is neither a layer nor a check is a usage error.
    The gate's own check always runs when the configuration sets requirements."""
    only = _csv(kw["only"])
    gate = kw.get("gate")
    if only and gate is not None and gate.requirements and "gate" not in only:
        only += ("gate",)
    return select(load_checks(), only, _csv(kw["skip"]))


def finish(facts: Facts, specs: list[CheckSpec], kw: dict[str, Any], redactor: Redactor, deadline: Deadline, title: str,
           say: Any = None) -> int:
    from llm_doctor.config import apply_ignores
    from llm_doctor.report import build_report
    from llm_doctor.report.render import render

    if kw.get("gate") is not None:
        facts.gate = kw["gate"]
    on_layer = (lambda layer: say(layer, "checking")) if say else None
    results = run_checks(facts, specs, deadline, on_layer=on_layer)
    results, ignored = apply_ignores(results, facts.gate.ignore if facts.gate else {})
    report = build_report(results, facts, title=title, ignored=ignored)
    if kw.get("save_bundle"):
        Path(kw["save_bundle"]).write_text(json.dumps(redactor.obj(facts.to_dict()), indent=2) + "\n")
    text = render(report, kw["fmt"], redactor, color=color_wanted(kw["fmt"], kw["output"]), fail_on=kw["fail_on"],
                  width=terminal_width(kw["output"]), verbose=bool(kw.get("verbose")))
    if kw["output"]:
        Path(kw["output"]).write_text(text)
    else:
        sys.stdout.write(text)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        from llm_doctor.report import github

        github.publish(report, redactor, os.environ.get("GITHUB_STEP_SUMMARY"))
    return report.exit_code(kw["fail_on"])


def terminal_width(output: str | None) -> int | None:
    """The terminal's width when the report goes to one; None (never wrap) to a file or a pipe."""
    if output or not sys.stdout.isatty():
        return None
    import shutil

    return shutil.get_terminal_size().columns


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
