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
    clean_length: int = 0  # without whitespace, quotes and a `Bearer ` prefix
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
    ca_bundle: Setting = field(default_factory=Setting)  # --ca-bundle, SSL_CERT_FILE, REQUESTS_CA_BUNDLE
    key_on_command_line: bool = False  # the key was an argument of this process (--api-key): `ps` shows it


@dataclass
class ProbeStep:
    """One step of the endpoint probe: `proxy`, `dns`, `tcp`, `tls`, `tls_sniff` and `raw` (the
    first bytes of an answer the HTTP client could not parse), or an HTTP request named by
    its purpose: `models`, `chat`, `stream`, `messages`, `messages_stream`, `candidate_models`,
    `candidate_chat`, `candidate_messages`, `sniff_messages`, `sniff_chat`, `slash` (the
    trailing-slash join). `detail` holds what the collector read from the answer (the server's
    error message, `choices` count, SSE event timings); judging is left to the checks."""

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
    base_url: str = ""  # as configured
    protocol: str = ""  # openai | anthropic
    steps: list[ProbeStep] = field(default_factory=list)
    served_models: list[str] | None = None  # ids from GET /models; None when not listed
    working_base_url: str = ""  # the base URL whose routes answered (may differ from base_url)
    url_error: str = ""  # why base_url could not be parsed; the probe stops there
    proxy_url: str = ""  # redacted proxy the requests went through, "" when direct
    proxy_var: str = ""  # the environment variable that named it
    resolved: list[str] = field(default_factory=list)  # addresses of the host (or the proxy)
    key_sent: str = ""  # "", "as-is", or "cleaned" (whitespace/quotes/Bearer removed before sending)
    insecure: bool = False  # --insecure: certificates not verified
    stopped: str = ""  # why the probe stopped early (deadline, timeout, network failure)
