"""Where the base URL, API key, model and protocol come from: flags, then environment, then the
config files real client tools keep. Every value remembers its source for the report, because
"which of my five places is this value coming from" is half of every access problem.

Config files read (HOME overridable for tests, cwd for the project-level ones):
- Claude Code: the `env` block of `.claude/settings.local.json`, `.claude/settings.json` (project)
  and `~/.claude/settings.json` (user), in that precedence
  (https://code.claude.com/docs/en/settings, https://code.claude.com/docs/en/env-vars).
- Codex CLI: `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`): `model`, `model_provider`
  and `[model_providers.<id>]` `base_url` / `env_key` (the name of the variable holding the key)
  (https://developers.openai.com/codex/config-sample).

The raw key lives only in `Settings` (and in the endpoint collector that sends it); Facts get it
masked, plus the `KeyTraits` computed here so checks can judge its shape without holding it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_doctor.facts.access import KeyTraits, Setting, SettingsFacts
from llm_doctor.redact import Redactor, mask

# environment variables in priority order, per setting
ENV = {
    "base_url": ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL"),
    "api_key": ("OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"),
    "model": ("OPENAI_MODEL", "ANTHROPIC_MODEL"),
}
PROXY_VARS = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy")
CA_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")

# key prefixes by provider, longest first (sk-ant- before sk-)
KEY_SHAPES = (
    ("sk-ant-", "anthropic"),
    ("sk-proj-", "openai"),
    ("sk-or-", "openrouter"),
    ("sk-", "openai"),
    ("hf_", "huggingface"),
    ("gsk_", "groq"),
    ("xai-", "xai"),
    ("AIza", "google"),
    ("ghp_", "github"),
    ("github_pat_", "github"),
)
PLACEHOLDERS = re.compile(r"^(?:empty|none|null|dummy|fake|test|x+|sk-x+|sk-\.\.\.|your[-_ ]?api[-_ ]?key|<[^>]*>|\$\{?\w+\}?)$", re.I)


@dataclass
class Resolved:
    value: str | None = None
    source: str = ""


@dataclass
class Settings:
    base_url: Resolved = field(default_factory=Resolved)
    api_key: Resolved = field(default_factory=Resolved)
    model: Resolved = field(default_factory=Resolved)
    protocol: Resolved = field(default_factory=Resolved)
    ca_bundle: Resolved = field(default_factory=Resolved)
    files_read: list[str] = field(default_factory=list)
    proxy_env: dict[str, str] = field(default_factory=dict)  # raw values; redacted in to_facts
    key_on_command_line: bool = False  # set by the CLI when --api-key was typed (visible in `ps`)

    def to_facts(self) -> SettingsFacts:
        key = self.api_key.value
        redactor = Redactor([key])
        return SettingsFacts(
            base_url=Setting(redactor.text(self.base_url.value) if self.base_url.value else self.base_url.value, self.base_url.source),
            api_key=Setting(mask(clean_key(key)) if key else key, self.api_key.source),
            key_traits=key_traits(key) if key is not None else None,
            model=Setting(self.model.value, self.model.source),
            protocol=Setting(self.protocol.value, self.protocol.source),
            proxy_env={k: redactor.text(v) for k, v in self.proxy_env.items()},
            files_read=list(self.files_read),
            ca_bundle=Setting(self.ca_bundle.value, self.ca_bundle.source),
            key_on_command_line=self.key_on_command_line and self.api_key.source == "flag --api-key",
        )


def resolve(
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    protocol: str = "auto",
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    cwd: Path | None = None,
    ca_bundle: str | None = None,
    given: Mapping[str, str] | None = None,
    api_key_env: str | None = None,
    api_key_file: str | None = None,
) -> Settings:
    """`given`: where a value passed in came from when it was not a flag (`file llm-doctor.toml`):
    the pipeline's own configuration ranks with the flags, above the environment.
    `api_key_env`/`api_key_file` name where the key is, so that it never is on the command line."""
    env = os.environ if env is None else env
    home = home or Path(env.get("HOME") or Path.home())
    cwd = cwd or Path.cwd()
    given = given or {}
    s = Settings()
    files = config_files(env, home, cwd, s.files_read)
    if api_key is None and (api_key_file or api_key_env):
        s.api_key = named_key(env, api_key_env, api_key_file, given)
    for name, flag in (("base_url", base_url), ("api_key", api_key), ("model", model)):
        if flag is not None:
            setattr(s, name, Resolved(flag, given.get(name) or f"flag --{name.replace('_', '-')}"))
            continue
        if name == "api_key" and s.api_key.source:
            continue
        for var in ENV[name]:
            if var in env:
                setattr(s, name, Resolved(env[var], f"env {var}"))
                break
        else:
            found = files.get(name)
            if found:
                setattr(s, name, found)
    anthropic_style = any("ANTHROPIC" in src for src in (s.base_url.source, s.api_key.source))
    if protocol != "auto":
        s.protocol = Resolved(protocol, "flag --protocol")
    else:
        s.protocol = Resolved("anthropic" if anthropic_style else "openai", "auto")
    s.proxy_env = {v: env[v] for v in PROXY_VARS if env.get(v)}
    if ca_bundle:
        s.ca_bundle = Resolved(ca_bundle, given.get("ca_bundle") or "flag --ca-bundle")
    else:
        var = next((v for v in CA_VARS if env.get(v)), None)
        if var:
            s.ca_bundle = Resolved(env[var], f"env {var}")
    return s


class KeyFileError(ValueError):
    """--api-key-file names a file that cannot be read (a usage error)."""


def named_key(env: Mapping[str, str], var: str | None, path: str | None, given: Mapping[str, str]) -> Resolved:
    """The key from the file or variable the user named; a file that cannot be read is a usage
    error (ValueError), a variable that is not set leaves the key missing with the reason as its source."""
    if path:
        where = given.get("api_key_file") or "flag --api-key-file"
        try:
            raw = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise KeyFileError(f"--api-key-file {path}: cannot read the key ({getattr(exc, 'strerror', None) or exc})") from None
        # a secret file mounted by Kubernetes or written by `echo` ends in one newline: not part of the key
        return Resolved(raw.removesuffix("\n").removesuffix("\r"), f"file {path} ({where})")
    where = given.get("api_key_env") or "flag --api-key-env"
    if var not in env:
        return Resolved(None, f"env {var} ({where}), which is not set")
    return Resolved(env[var], f"env {var} ({where})")


def config_files(env: Mapping[str, str], home: Path, cwd: Path, read: list[str]) -> dict[str, Resolved]:
    """Settings found in client config files, first file wins per setting."""
    found: dict[str, Resolved] = {}
    claude = [(home / ".claude" / "settings.json", "~/.claude/settings.json")]
    if _real(cwd) != _real(home):  # run from $HOME: the project file is the user file
        claude[:0] = [
            (cwd / ".claude" / "settings.local.json", ".claude/settings.local.json"),
            (cwd / ".claude" / "settings.json", ".claude/settings.json"),
        ]
    for path, shown in claude:
        block = _json_env_block(path)
        if block is None:
            continue
        if isinstance(block, str):  # there, but not a settings file: said, and nothing taken from it
            read.append(f"{shown} ({block}; ignored)")
            continue
        read.append(shown)
        for name, names in ENV.items():
            var = next((v for v in names if isinstance(block.get(v), str)), None)
            if var and name not in found:
                found[name] = Resolved(block[var], f"file {shown} env.{var}")
    codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    codex = _toml(codex_home / "config.toml")
    shown = "$CODEX_HOME/config.toml" if env.get("CODEX_HOME") else "~/.codex/config.toml"
    if isinstance(codex, str):
        read.append(f"{shown} ({codex}; ignored)")
    elif codex is not None:
        read.append(shown)
        provider_id = codex.get("model_provider")
        providers = codex.get("model_providers")
        provider = providers.get(provider_id) if isinstance(provider_id, str) and isinstance(providers, dict) else None
        if isinstance(codex.get("model"), str) and "model" not in found:
            found["model"] = Resolved(codex["model"], f"file {shown} model")
        if isinstance(provider, dict):
            if isinstance(provider.get("base_url"), str) and "base_url" not in found:
                found["base_url"] = Resolved(provider["base_url"], f"file {shown} model_providers.{provider_id}.base_url")
            key_var = provider.get("env_key")
            if isinstance(key_var, str) and env.get(key_var) is not None and "api_key" not in found:
                found["api_key"] = Resolved(env[key_var], f"env {key_var} (env_key of {shown} model_providers.{provider_id})")
    return found


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def _json_env_block(path: Path) -> dict[str, Any] | str | None:
    """The file's `env` object; None when there is no such file; a string saying what is wrong
    with one that is there but unreadable or not a settings object."""
    try:
        data = json.loads(path.read_bytes()[: 4 * 1024 * 1024].decode("utf-8"))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    except (ValueError, RecursionError) as exc:
        return f"not valid JSON: {type(exc).__name__}"
    if not isinstance(data, dict):
        return f"not a JSON object but a {type(data).__name__}"
    env = data.get("env")
    return env if isinstance(env, dict) else {}


def _toml(path: Path) -> dict[str, Any] | str | None:
    """Like _json_env_block: the parsed file, None when absent, or what is wrong with it."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: the same parser, from PyPI (a dependency there)
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    except (ValueError, RecursionError) as exc:
        return f"not valid TOML: {str(exc)[:80]}"


def clean_key(key: str) -> str:
    """The key as the user meant it: whitespace, quotes and a pasted `Bearer ` prefix removed."""
    k = key.strip().strip("'\"").strip()
    if k.lower().startswith("bearer "):
        k = k[7:].strip()
    return k


def key_traits(key: str) -> KeyTraits:
    inner = key.strip()
    core = clean_key(key)
    shape = next((provider for prefix, provider in KEY_SHAPES if core.startswith(prefix)), "")
    return KeyTraits(
        length=len(key),
        clean_length=len(core),
        leading_or_trailing_whitespace=inner != key,
        inner_whitespace=any(c.isspace() for c in core),
        newline="\n" in key or "\r" in key,
        quoted=len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"",
        bearer_prefix=inner.strip("'\"").strip().lower().startswith("bearer "),
        provider_shape=shape,
        placeholder=bool(PLACEHOLDERS.match(core)) or core == "",
    )
