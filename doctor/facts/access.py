"""Facts of the access channel: where the settings came from, and the endpoint probe transcript."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Setting:
    """One resolved setting and where it came from (`flag --base-url`, `env OPENAI_BASE_URL`,
    `file ~/.claude/settings.json env.ANTHROPIC_BASE_URL`). Secrets are stored masked."""

    value: str | None = None
    source: str = ""


@dataclass
class KeyTraits:
    """What the collector saw in the raw key, so checks can judge it without ever holding it."""

    length: int = 0
    leading_or_trailing_whitespace: bool = False
    inner_whitespace: bool = False
    newline: bool = False
    quoted: bool = False
    bearer_prefix: bool = False
    provider_shape: str = ""  # "openai", "anthropic", "hf", "google", ... or "" when unknown
    placeholder: bool = False  # EMPTY, none, sk-xxx, <TOKEN> ...


@dataclass
class SettingsFacts:
    base_url: Setting = field(default_factory=Setting)
    api_key: Setting = field(default_factory=Setting)  # value is masked
    key_traits: KeyTraits | None = None
    model: Setting = field(default_factory=Setting)
    protocol: Setting = field(default_factory=Setting)
    proxy_env: dict[str, str] = field(default_factory=dict)  # name -> redacted value
    files_read: list[str] = field(default_factory=list)


@dataclass
class ProbeStep:
    """One step of the endpoint probe: dns, tcp, tls, proxy, or an HTTP request."""

    step: str
    target: str = ""
    ok: bool = False
    duration_ms: float = 0.0
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body_excerpt: str = ""
    content_type: str = ""
    error_class: str = ""
    error: str = ""
    detail: dict[str, object] = field(default_factory=dict)


@dataclass
class EndpointFacts:
    base_url: str = ""
    protocol: str = ""
    steps: list[ProbeStep] = field(default_factory=list)
    served_models: list[str] | None = None
