"""The command line, kept thin: flags -> Settings/options -> collect -> check -> report.

Heavy modules (httpx, rich, pynvml, prometheus_client) are imported inside the commands so that
`llm-doctor --help` answers at once.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import click

from llm_doctor import __version__

FORMATS = ("text", "json", "markdown", "html", "junit")
REPORT_FORMATS = (*FORMATS, "codequality")  # run/analyze/plan; GitLab Code Quality is a report of findings
LAYER_NAMES = ("access", "load", "perf")


def _csv(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(v.strip() for item in values for v in item.split(",") if v.strip())


class Seconds(click.ParamType):
    """A time limit: a finite number of seconds above 0 (0, negative, nan or inf would make the
    run end before it starts, or never)."""

    name = "seconds"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            seconds = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not 0 < seconds <= 86400:  # also false for nan
            self.fail(f"{value!r} must be above 0 and at most 86400 seconds", param, ctx)
        return seconds


def output_options(f: Callable) -> Callable:
    for opt in reversed(
        [
            click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default="text", show_default=True),
            click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report to FILE."),
            click.option("--save-bundle", type=click.Path(dir_okay=False), help="Save the collected facts (redacted JSON)."),
            click.option(
                "--fail-on",
                type=click.Choice(["error", "warn", "never"]),
                default="error",
                show_default=True,
                help="Exit 1 when a finding at or above this severity exists.",
            ),
            click.option("--only", multiple=True, help="Layers or check ids to run (comma-separated)."),
            click.option("--skip", multiple=True, help="Check ids or layers to skip (comma-separated)."),
            click.option("--deadline", type=Seconds(), default=60.0, show_default=True, help="Overall time limit, seconds."),
            click.option("--verbose", "-v", is_flag=True, help="Text report: list every check (passed and skipped ones fold into a line per layer)."),
        ]
    ):
        f = opt(f)
    return f


# --- the deploy gate: configuration file, waiting for a starting server, keys off the command line ---


def config_option(f: Callable) -> Callable:
    return click.option(
        "--config",
        type=click.Path(exists=True, dir_okay=False),
        help="Configuration file (default: ./llm-doctor.toml, else [tool.llm-doctor] in ./pyproject.toml). Flags override it.",
    )(f)


def gate_options(f: Callable) -> Callable:
    for opt in reversed(
        [
            click.option("--api-key-env", metavar="NAME", help="Read the API key from this environment variable."),
            click.option(
                "--api-key-file",
                type=click.Path(dir_okay=False),
                help="Read the API key from this file (a mounted secret; one trailing newline is dropped).",
            ),
            click.option(
                "--wait-ready",
                type=Seconds(),
                help="Poll the server's /health, then /models, for up to SECONDS until it answers, before diagnosing it.",
            ),
        ]
    ):
        f = opt(f)
    return config_option(f)


def with_config(kw: dict[str, object]) -> dict[str, object]:
    """The command's options with the configuration file filled in (doctor/config.py)."""
    from llm_doctor import config

    return config.apply(click.get_current_context(), kw)


# --- end of the deploy gate's options ---


SECRET_FLAGS = ("--api-key",)
SECRET_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "HF_TOKEN")


class RedactingGroup(click.Group):
    """Click's usage errors quote what was typed ("Got unexpected extra argument (…)"): a key pasted
    unquoted with a space in it would land on stderr. They are redacted like every other output."""

    def main(self, args: list[str] | None = None, *rest: object, **kw: object) -> object:  # type: ignore[override]
        argv = list(sys.argv[1:] if args is None else args)
        try:
            return super().main(argv, *rest, **{**kw, "standalone_mode": False})  # type: ignore[arg-type]
        except click.ClickException as exc:
            from llm_doctor.redact import Redactor

            exc.message = Redactor([*typed_secrets(argv), *(os.environ.get(v) for v in SECRET_ENV)]).text(exc.message)
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)


def typed_secrets(argv: list[str]) -> list[str]:
    """What follows a secret flag on the command line, up to the next flag (all of it: a key with
    a space in it arrives as several arguments)."""
    out, taking = [], False
    for arg in argv:
        name, eq, value = arg.partition("=")
        if name in SECRET_FLAGS:
            taking = not eq
            out += [value] if eq else []
        elif arg.startswith("-"):
            taking = False
        elif taking:
            out.append(arg)
    return out


@click.group(cls=RedactingGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="llm-doctor")
def main() -> None:
    """Diagnose an LLM inference service layer by layer: access -> load -> perf.

    Ends with a ranked list of fixes with exact flags and values.
    Exit codes: 0 ok, 1 findings at/above --fail-on, 2 usage error, 3 the doctor failed.
    """


@main.command()
@click.option("--base-url", help="Endpoint base URL, e.g. http://10.0.0.5:8000/v1")
@click.option("--api-key", help="API key (shown only masked; visible in `ps`: prefer --api-key-env or --api-key-file).")
@click.option("--model", help="Model ID the client asks for.")
@click.option("--protocol", type=click.Choice(["openai", "anthropic", "auto"]), default="auto", show_default=True)
@click.option("--timeout", type=Seconds(), default=10.0, show_default=True, help="Per-request timeout, seconds.")
@click.option("--ca-bundle", type=click.Path(exists=True, dir_okay=False), help="CA bundle for TLS verification.")
@click.option("--insecure", is_flag=True, help="Do not verify TLS certificates (reported as a warning).")
@click.option("--log", "logs", multiple=True, help="Engine log file/folder/- to analyse (repeatable).")
@click.option("--docker", help="Read `docker logs CONTAINER`.")
@click.option("--k8s", help="Read `kubectl logs POD`.")
@click.option("--namespace", help="Kubernetes namespace for --k8s.")
@click.option("--previous", is_flag=True, help="With --k8s: the previous (crashed) container's log.")
@click.option("--metrics-url", help="Prometheus endpoint (default: the base URL's host + /metrics).")
@click.option("--sample", type=float, default=3.0, show_default=True, help="GPU/metrics sampling window, seconds.")
@click.option("--probe-load", type=click.IntRange(0, 16), default=0, help="Opt-in concurrency probe with N requests.")
@click.option("--ray", "ray_address", help="Inspect every node of a Ray cluster: ADDRESS (HOST:PORT), or auto (RAY_ADDRESS, else the cluster started on this machine).")
@output_options
@gate_options
def run(**kw: object) -> None:
    """Collect everything reachable, check it, and report."""
    from llm_doctor import runner

    kw = with_config(kw)

    if kw["ray_address"]:
        from llm_doctor.collect.ray_cluster import require_ray

        try:
            require_ray()
        except RuntimeError as exc:
            raise click.UsageError(str(exc)) from None

    sys.exit(runner.run_command(kw))


@main.command()
@click.argument("paths", nargs=-1, required=True)
@output_options
@config_option
def analyze(paths: tuple[str, ...], **kw: object) -> None:
    """Offline diagnosis of saved artefacts: logs (.gz, folders, - for stdin), bundles,
    nvidia-smi outputs, topo matrices, /metrics scrapes, engine command lines."""
    from llm_doctor import runner

    kw = with_config(kw)

    sys.exit(runner.analyze_command(paths, kw))


@main.command(context_settings={"ignore_unknown_options": True})
@click.option("--model", help="Repo id, local model folder, or a served name in the built-in table.")
@click.option("--gpu", help="GPU name: H100, H200, A100-80GB, A100-40GB, L4, A10G, L40S, RTX4090, ...")
@click.option("--gpus", type=click.IntRange(1, 1024), help="Number of GPUs (default: TP x PP).")
@click.option(
    "--gpu-memory",
    type=click.FloatRange(0, min_open=True),
    help="Memory per GPU in GiB as nvidia-smi shows it (instead of --gpu).",
)
@click.option("--engine", type=click.Choice(["vllm", "sglang", "tgi"]), default="vllm", show_default=True)
@click.option("--tensor-parallel-size", "--tp", "tensor_parallel_size", type=click.IntRange(1, 1024))
@click.option("--pipeline-parallel-size", "--pp", "pipeline_parallel_size", type=click.IntRange(1, 1024))
@click.option("--max-model-len", type=click.IntRange(1))
@click.option("--gpu-memory-utilization", type=click.FloatRange(0, 1, min_open=True))
@click.option("--kv-cache-dtype")
@click.option("--quantization")
@click.option("--max-num-seqs", type=click.IntRange(1))
@click.option("--max-num-batched-tokens", type=click.IntRange(1))
@click.option("--dtype")
@click.option("--block-size", type=click.IntRange(1))
@click.option("--offline", is_flag=True, help="Never ask the Hugging Face hub.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@output_options
@config_option
def plan(**kw: object) -> None:
    """Pre-flight memory fit: will MODEL fit these GPUs with these engine args?

    Give flags, or an engine command line after `--`: llm-doctor plan --gpu H100 --gpus 4 -- vllm serve MODEL -tp 4
    """
    from llm_doctor.planning import plan_command

    sys.exit(plan_command(with_config(kw)))


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """What a finding code means, and which checks emit it."""
    from llm_doctor.codes import CODES
    from llm_doctor.engine import load_checks

    entry = CODES.get(code)
    if entry is None:
        close = [c for c in CODES if code.split(".")[-1] in c]
        raise click.UsageError(f"unknown code {code!r}" + (f"; did you mean {', '.join(close)}?" if close else ""))
    emitters = [s.id for s in load_checks().values() if code in s.codes] or (["llm-doctor baseline compare"] if entry.layer == "baseline" else [])
    click.echo(f"{entry.code} ({entry.layer}, default severity {entry.severity})\n  {entry.meaning}")
    click.echo(f"  emitted by: {', '.join(emitters) or '(no check yet)'}")


@main.command(name="checks")
def list_checks() -> None:
    """List every check in the order it runs: id, layer, what it judges (facts sections, log event
    kinds, a running engine), the checks it comes after, and the codes it can emit."""
    from llm_doctor.engine import load_checks, select

    for s in select(load_checks()):
        click.echo(f"{s.id:<30} {s.layer:<7} {s.title}")
        click.echo(f"{'':<39}reads: {s.inputs()}")
        if s.after:
            click.echo(f"{'':<39}after: {', '.join(s.after)}")
        click.echo(f"{'':<39}codes: {', '.join(s.codes)}")
    click.echo(f"{'doctor.coverage':<30} {'doctor':<7} After every check, the engine itself: what no check judged.")
    click.echo(f"{'':<39}reads: every check's declared events and findings; events exception, crash_signal, error_line")
    click.echo(f"{'':<39}codes: load.unrecognized_failure, access.unrecognized_failure, doctor.check_crashed, doctor.input_incomplete")


@main.command(name="catalogue")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def catalogue_coverage(fmt: str) -> None:
    """What the message catalogue covers: templates per engine, per event kind and per finding code."""
    from llm_doctor.catalogue_coverage import coverage, render

    click.echo(render(coverage(), fmt))


def color_wanted(fmt: str, output: str | None) -> bool:
    return fmt == "text" and output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ


@main.group()
def baseline() -> None:
    """Did the change work? Record a fixed request set before and after a change, then compare
    latency, throughput, KV cache, GPU memory and answer quality."""


@baseline.command(name="record")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="Write the baseline JSON here.")
@click.option("--base-url", help="Endpoint base URL, e.g. http://10.0.0.5:8000/v1")
@click.option("--api-key", help="API key (never written; the file holds its mask; visible in `ps`: prefer --api-key-env).")
@click.option("--api-key-env", metavar="NAME", help="Read the API key from this environment variable.")
@click.option("--api-key-file", type=click.Path(dir_okay=False), help="Read the API key from this file (one trailing newline is dropped).")
@click.option("--model", "models", multiple=True, help="Model ID; repeat to record several behind one endpoint.")
@click.option("--protocol", type=click.Choice(["openai", "anthropic", "auto"]), default="auto", show_default=True)
@click.option("--prompts", type=click.Path(dir_okay=False), help="Your own request set (JSONL; see README).")
@click.option("--repeat", type=click.IntRange(2, 50), default=3, show_default=True, help="Times each request is sent (noise estimate).")
@click.option("--concurrency", type=click.IntRange(1, 256), default=4, show_default=True, help="Requests in flight for the throughput rounds.")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed sent with every request (temperature is 0).")
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Per-request timeout, seconds.")
@click.option("--metrics-url", help="Prometheus endpoint (default: the base URL's host + /metrics).")
@click.option("--log", "logs", multiple=True, help="Engine log to read the KV cache size and arguments from (repeatable).")
@click.option("--deadline", type=click.FloatRange(1.0), default=900.0, show_default=True, help="Overall time limit, seconds.")
def baseline_record(**kw: object) -> None:
    """Send the request set and save outputs, latency, throughput and the server's state."""
    from llm_doctor.baseline.commands import record_command

    sys.exit(record_command(kw))


@baseline.command(name="compare")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--tolerance", type=click.FloatRange(0.0, 10.0), default=0.10, show_default=True,
              help="Relative change tolerated before a figure counts as regressed (0.10 = 10%).")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report to FILE.")
@click.option("--fail-on", type=click.Choice(["error", "warn", "never"]), default="error", show_default=True,
              help="Exit 1 when a finding at or above this severity exists.")  # fmt: skip
def baseline_compare(files: tuple[str, ...], **kw: object) -> None:
    """Compare BEFORE.json AFTER.json side by side (or rank the models of one file)."""
    from llm_doctor.baseline.commands import compare_command

    sys.exit(compare_command(files, kw))
