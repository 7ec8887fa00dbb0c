"""The one place secrets are masked. Every output (text, JSON, markdown, HTML, JUnit, bundles,
error messages, quoted log lines) goes through a Redactor.

Two layers: the exact secrets the doctor was given (the API key, HF token) are replaced wherever
they appear, and patterns catch the ones it was not given (provider key shapes, bearer tokens,
Authorization/x-api-key headers, passwords in URLs, `--api-key VALUE` on command lines).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# a secret value ends at whitespace, a quote, or markup/JSON punctuation around it
_V = r"[^\s'\"`,;}<>&()\[\]\\]"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # user:password@ in URLs
    (re.compile(r"(?P<pre>[a-z][a-z0-9+.-]*://[^/\s:@]+:)(?P<secret>[^@\s/]+)(?=@)", re.I), "pw"),
    # Authorization / x-api-key / api-key headers, echoed by gateways or pasted in logs
    (re.compile(r"(?P<pre>\b(?:authorization|proxy-authorization)\s*[:=]\s*(?:bearer|basic|token)?\s*)(?P<secret>" + _V + r"+)", re.I), "key"),
    (re.compile(r"(?P<pre>\b(?:x-api-key|api-key|x-goog-api-key)\s*[:=]\s*)(?P<secret>" + _V + r"+)", re.I), "key"),
    (re.compile(r"(?P<pre>\bbearer\s+)(?P<secret>[A-Za-z0-9._~+/=-]{8,})", re.I), "key"),
    # --api-key VALUE / api_key=VALUE / "api_key": "VALUE" / HF_TOKEN=VALUE
    (re.compile(r"(?P<pre>--(?:api-key|hf-token|token)[= ]\s*)(?P<secret>" + _V + r"+)", re.I), "key"),
    (
        re.compile(
            r"(?P<pre>\b(?:api_key|apikey|access_token|auth_token|hf_token|hugging_face_hub_token|"
            r"openai_api_key|anthropic_api_key|anthropic_auth_token|password|secret)['\"]?\s*[:=]\s*['\"]?)"
            r"(?P<secret>" + _V + r"{4,})",
            re.I,
        ),
        "key",
    ),
    # provider key shapes anywhere
    (re.compile(r"(?P<pre>)(?P<secret>\b(?:sk-ant-|sk-proj-|sk-|hf_|gsk_|xai-|ghp_|github_pat_|glpat-)[A-Za-z0-9_-]{12,})"), "key"),
    (re.compile(r"(?P<pre>)(?P<secret>\bAIza[0-9A-Za-z_-]{30,})"), "key"),
    (re.compile(r"(?P<pre>)(?P<secret>\bAKIA[0-9A-Z]{16}\b)"), "key"),
)

_PLACEHOLDERS = {"empty", "none", "null", "dummy", "<token>", "your-api-key", "sk-xxx"}


def mask(secret: str) -> str:
    """Show a key only as its first 3 and last 4 characters; short values not at all."""
    s = secret.strip()
    if len(s) < 12:
        return "****"
    return f"{s[:3]}...{s[-4:]}"


class Redactor:
    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # exact secrets, longest first, also with surrounding whitespace/quotes stripped, so a key
        # pasted with a newline or quotes is caught in every form it may take in an output
        forms: set[str] = set()
        for s in secrets:
            if not s:
                continue
            for form in (s, s.strip(), s.strip().strip("'\"").strip(), s.strip().removeprefix("Bearer ").strip()):
                if len(form) >= 4 and form.lower() not in _PLACEHOLDERS:
                    forms.add(form)
        self.secrets = sorted(forms, key=len, reverse=True)

    def text(self, s: str) -> str:
        for secret in self.secrets:
            if secret in s:
                s = s.replace(secret, mask(secret))
        for pattern, kind in _PATTERNS:
            s = pattern.sub(lambda m, kind=kind: m.group("pre") + _masked(m.group("secret"), kind), s)
        return s

    def obj(self, value: Any) -> Any:
        """Redact every string inside a JSON-able structure (keys included)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.obj(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.obj(v) for v in value]
        return value


def _masked(secret: str, kind: str) -> str:
    if kind == "pw" or "..." in secret or secret == "****":
        return "****" if kind == "pw" else secret
    if secret.lower() in _PLACEHOLDERS:
        return secret
    return mask(secret)
