"""The pipeline's own configuration: `--config FILE`, else `llm-doctor.toml` in the working
directory, else `[tool.llm-doctor]` in its `pyproject.toml`.

A deploy gate is written once and run on every rollout, so what it checks and what it requires
live in a reviewed file, not in a long command line. Flags given on the command line override the
file; every option records where its value came from (`flag --wait-ready`, `file llm-doctor.toml`,
`default`), and the report shows it. An unknown key is a usage error naming the closest valid one:
a misspelt requirement must not silently stop being enforced.

The key is never in the file, only the name of the variable that holds it (`api_key_env`) or the
file that does (`api_key_file`, e.g. a mounted Kubernetes secret).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from llm_doctor.facts.gate import ConfigValue, GateFacts

CONFIG_NAME = "llm-doctor.toml"

# key in the file -> the command's parameter it sets
OPTIONS = {
    "endpoint": "base_url",
    "model": "model",
    "api_key_env": "api_key_env",
    "api_key_file": "api_key_file",
    "protocol": "protocol",
    "timeout": "timeout",
    "ca_bundle": "ca_bundle",
    "log": "logs",
    "docker": "docker",
    "k8s": "k8s",
    "namespace": "namespace",
    "metrics_url": "metrics_url",
    "probe_load": "probe_load",
    "wait_ready": "wait_ready",
    "only": "only",
    "skip": "skip",
    "fail_on": "fail_on",
    "deadline": "deadline",
}
PATHS = ("api_key_file", "ca_bundle", "log")  # relative to the configuration file's folder
KEY_PARAMS = ("api_key", "api_key_env", "api_key_file")
# requirement -> (type, lowest allowed, highest allowed)
REQUIREMENTS: dict[str, tuple[type, float, float]] = {
    "min_kv_cache_tokens": (int, 0, 1e12),
    "min_concurrency": (float, 0.0, 1e6),
    "context_length": (int, 0, 1e9),
    "max_ttft_ms": (float, 0.0, 1e7),
    "min_tokens_per_s": (float, 0.0, 1e9),
    "max_gpu_memory_fraction": (float, 0.0, 1.0),
}
TABLES = ("requirements", "ignore")
FROM_COMMAND_LINE = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT, ParameterSource.PROMPT)


def find(explicit: str | None, cwd: Path) -> tuple[Path, str, dict[str, Any]] | None:
    """(path, how the report names it, the llm-doctor table), or None when there is no configuration."""
    if explicit:
        path = Path(explicit)
        data = _read(path, explicit)
        if path.name == "pyproject.toml":
            return path, f"{explicit} [tool.llm-doctor]", _tool_table(data, explicit) or {}
        return path, explicit, data
    own = cwd / CONFIG_NAME
    if own.is_file():
        return own, CONFIG_NAME, _read(own, CONFIG_NAME)
    pyproject = cwd / "pyproject.toml"
    if pyproject.is_file():
        table = _tool_table(_read(pyproject, "pyproject.toml"), "pyproject.toml")
        if table is not None:
            return pyproject, "pyproject.toml [tool.llm-doctor]", table
    return None


def apply(ctx: click.Context, kw: dict[str, Any], cwd: Path | None = None) -> dict[str, Any]:
    """The command's options with the configuration filled in where no flag was given, plus
    `gate` (GateFacts: requirements, ignored codes, where each value came from)."""
    found = find(kw.get("config"), cwd or Path.cwd())
    path, shown, table = found if found else (None, "", {})
    _check_keys(table, shown)
    params = {p.name: p for p in ctx.command.params if p.name}
    out = dict(kw)
    values: list[ConfigValue] = []
    # a key given on the command line in any form replaces the file's way to the key
    key_flag = any(n in params and ctx.get_parameter_source(n) in FROM_COMMAND_LINE for n in KEY_PARAMS)
    for key, name in OPTIONS.items():
        param = params.get(name)
        if param is None:  # a key this command does not use (endpoint for analyze)
            continue
        if ctx.get_parameter_source(name) in FROM_COMMAND_LINE:
            source = f"flag {_flag(param)}"
        elif key in table and not (key_flag and name in KEY_PARAMS):
            out[name] = _convert(ctx, param, key, table[key], shown, path)
            source = f"file {shown}"
        else:
            source = "default"
        if out[name] not in (None, (), False) or source != "default":
            values.append(ConfigValue(key, _show(out[name]), source))
    requirements = {k: _requirement(k, v, shown) for k, v in (table.get("requirements") or {}).items()}
    ignore = {code: _reason(code, reason, shown) for code, reason in (table.get("ignore") or {}).items()}
    values += [ConfigValue(f"requirements.{k}", _show(v), f"file {shown}") for k, v in requirements.items()]
    out["gate"] = GateFacts(config_file=shown, requirements=requirements, ignore=ignore, values=values) if found else None
    return out


def _flag(param: click.Parameter) -> str:
    opts = getattr(param, "opts", None) or [param.name or ""]
    return max(opts, key=len)


def _show(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _read(path: Path, shown: str) -> dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise click.UsageError(f"{shown}: cannot read the configuration: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:
        raise click.UsageError(f"{shown}: not valid TOML: {exc}") from None


def _tool_table(data: dict[str, Any], shown: str) -> dict[str, Any] | None:
    tool = data.get("tool")
    table = tool.get("llm-doctor") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise click.UsageError(f"{shown}: [tool.llm-doctor] must be a table")
    return table


def _closest(key: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.0)
    return f"; the closest valid key is {close[0]!r}" if close else ""


def _check_keys(table: dict[str, Any], shown: str) -> None:
    valid = [*OPTIONS, *TABLES]
    for key, value in table.items():
        if key not in valid:
            raise click.UsageError(f"{shown}: unknown key {key!r}{_closest(key, valid)}")
        if key in TABLES and not isinstance(value, dict):
            raise click.UsageError(f"{shown}: {key!r} must be a table ([{key}])")
    for key in table.get("requirements") or {}:
        if key not in REQUIREMENTS:
            raise click.UsageError(f"{shown}: unknown key 'requirements.{key}'{_closest(key, list(REQUIREMENTS))}")


def _convert(ctx: click.Context, param: click.Parameter, key: str, value: Any, shown: str, path: Path | None) -> Any:
    """The file's value through the same type as the flag's (ranges, choices, seconds), so a bad
    value in the file is the same usage error as the same value typed on the command line."""
    multiple = bool(getattr(param, "multiple", False))
    if multiple:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
            raise click.UsageError(f"{shown}: {key}: expected a string or a list of strings, got {value!r}")
        value = tuple(_relative(key, v, path) for v in items)
    elif isinstance(value, (dict, list)):
        raise click.UsageError(f"{shown}: {key}: expected a single value, got {type(value).__name__}")
    else:
        value = _relative(key, value, path)
    try:
        return param.type_cast_value(ctx, value)
    except click.BadParameter as exc:
        raise click.UsageError(f"{shown}: {key}: {exc.message}") from None


def _relative(key: str, value: Any, path: Path | None) -> Any:
    if key in PATHS and isinstance(value, str) and value != "-" and path is not None and not Path(value).is_absolute():
        return str(path.parent / value)
    return value


def _requirement(key: str, value: Any, shown: str) -> float:
    kind, low, high = REQUIREMENTS[key]
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (kind is float or isinstance(value, int))
    if not ok or not low < value <= high:  # also false for nan
        what = "a whole number" if kind is int else "a number"
        raise click.UsageError(f"{shown}: requirements.{key}: expected {what} above {low:g} and at most {high:g}, got {value!r}")
    return value


def _reason(code: str, reason: Any, shown: str) -> str:
    from llm_doctor.codes import CODES

    if code not in CODES:
        raise click.UsageError(f"{shown}: ignore: unknown finding code {code!r}{_closest(code, list(CODES))}")
    if code.startswith("doctor."):
        raise click.UsageError(f"{shown}: ignore: {code} cannot be ignored: it says what was not read or judged")
    if not isinstance(reason, str) or not reason.strip():
        raise click.UsageError(f'{shown}: ignore: {code} needs a reason, e.g. "{code}" = "why this is accepted"')
    return reason.strip()



def apply_ignores(results: list[Any], ignore: dict[str, str]) -> tuple[list[Any], list[tuple[Any, str]]]:
    """The check results without the findings whose codes the configuration ignores, and those
    findings with the reason given. A check left with no finding passes, its detail saying what was
    ignored, so every format (text, JSON, JUnit, the exit code) agrees on the gate."""
    from dataclasses import replace

    if not ignore:
        return results, []
    out, ignored = [], []
    for r in results:
        gone = [f for f in r.findings if f.code in ignore]
        if not gone:
            out.append(r)
            continue
        ignored += [(f, ignore[f.code]) for f in gone]
        kept = [f for f in r.findings if f.code not in ignore]
        note = "ignored by the configuration: " + ", ".join(sorted({f.code for f in gone}))
        status = r.status if kept or r.status not in ("warn", "fail") else "pass"
        out.append(replace(r, findings=kept, status=status, detail=f"{r.detail}; {note}" if r.detail else note))
    return out, ignored
