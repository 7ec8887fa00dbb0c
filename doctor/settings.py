"""Where the base URL, API key, model and protocol come from: flags, then environment, then the
config files real client tools keep. Every value remembers its source for the report.

The raw key lives only here (and in the endpoint collector that sends it); Facts get it masked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from doctor.facts.access import Setting, SettingsFacts
from doctor.redact import mask

# environment variables in priority order, per setting
ENV = {
    "base_url": ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL"),
    "api_key": ("OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"),
    "model": ("OPENAI_MODEL", "ANTHROPIC_MODEL"),
}


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
    files_read: list[str] = field(default_factory=list)

    def to_facts(self) -> SettingsFacts:
        key = self.api_key.value
        return SettingsFacts(
            base_url=Setting(self.base_url.value, self.base_url.source),
            api_key=Setting(mask(key) if key else key, self.api_key.source),
            model=Setting(self.model.value, self.model.source),
            protocol=Setting(self.protocol.value, self.protocol.source),
            files_read=list(self.files_read),
        )


def resolve(
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    protocol: str = "auto",
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Settings:
    env = os.environ if env is None else env
    s = Settings()
    for name, flag in (("base_url", base_url), ("api_key", api_key), ("model", model)):
        if flag is not None:
            setattr(s, name, Resolved(flag, f"flag --{name.replace('_', '-')}"))
            continue
        for var in ENV[name]:
            if var in env:
                setattr(s, name, Resolved(env[var], f"env {var}"))
                break
    anthropic_style = any(src.startswith("env ANTHROPIC") for src in (s.base_url.source, s.api_key.source))
    if protocol != "auto":
        s.protocol = Resolved(protocol, "flag --protocol")
    else:
        s.protocol = Resolved("anthropic" if anthropic_style else "openai", "auto")
    return s
