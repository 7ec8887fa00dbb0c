"""The one place secrets are masked. Every output (text, JSON, markdown, HTML, JUnit, bundles,
error messages, quoted log lines) goes through a Redactor.

Three layers: the exact secrets the doctor was given (the API key, HF token) are replaced wherever
they appear; any fragment of 8 or more of their characters is masked too (a server that echoes a
truncated key must not leak 32 of its 43 characters); and patterns catch the ones it was not
given (provider key shapes, bearer tokens, Authorization/x-api-key headers, passwords in URLs,
secret flags on command lines (`--api-key V`, `--api_key=V`, `--hf_token V`), `KEY=V`
assignments, and URL query parameters named like keys (`?key=`, `&token=`, `&sig=`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# a secret value ends at whitespace, a quote, or markup/JSON punctuation around it
_V = r"[^\s'\"`,;}<>&()\[\]\\]"
# a name that says its value is a secret: api-key, api_key, apikey, hf_token, access_token, token,
# secret, client_secret, password (not max_tokens, tokenizer or token_id: the name must end there)
_SECRET_WORD = r"(?:api[-_]?key|access[-_]?key|secret[-_]?key|private[-_]?key|token|secret|password|passwd)"
_SECRET_END = re.compile(r"(?:^|[-_])" + _SECRET_WORD + r"$", re.I)
_QUERY_END = re.compile(r"(?:key|sig|signature|auth|credential)$", re.I)
# a name candidate: a whole word (never a piece of one, so a long run of letters costs one try,
# not one per letter) ending in a secret-ish word; is_secret_name then applies the exact rule
_NAME = r"(?<![A-Za-z0-9_-])(?P<name>[A-Za-z0-9_-]*?(?:key|token|secret|password|passwd))"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # user:password@ in URLs
    (re.compile(r"(?P<pre>(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^/\s:@]+:)(?P<secret>[^@\s/]+)(?=@)", re.I), "pw"),
    # Authorization / x-api-key / api-key headers, echoed by gateways or pasted in logs
    (re.compile(r"(?P<pre>\b(?:authorization|proxy-authorization)\s*[:=]\s*(?:bearer|basic|token)?\s*)(?P<secret>" + _V + r"+)", re.I), "key"),
    (re.compile(r"(?P<pre>\b(?:x-api-key|api-key|x-goog-api-key)\s*[:=]\s*)(?P<secret>" + _V + r"+)", re.I), "key"),
    (re.compile(r"(?P<pre>\bbearer\s+)(?P<secret>[A-Za-z0-9._~+/=-]{8,})", re.I), "key"),
    # secret flags, `-` or `_`, `=` or a space, also as argv lists: --api-key V, --api_key=V,
    # '--hf_token', 'V' (a Python list), "--token", "V" (JSON), `- --api-key` / `- V` (YAML),
    # `--api-key \` and V on the next line (a shell continuation)
    (re.compile(r"(?P<pre>" + _NAME + r"(?:=|['\"]\s*,\s*['\"]|\s*\n\s*-\s+|[ \t]+(?:\\\r?\n\s*)?))(?P<secret>(?!--)" + _V + r"+)", re.I), "flag"),
    # api_key=V / "api_key": "V" / VLLM_API_KEY=V / HF_TOKEN: V / Namespace(api_key='V')
    (re.compile(r"(?P<pre>" + _NAME + r"['\"]?\s*[:=]\s*['\"]?)(?P<secret>" + _V + r"{4,})", re.I), "named"),
    # URL query parameters named like keys: ?key=V &api_key=V &token=V &sig=V
    (re.compile(r"(?P<pre>[?&](?P<name>[A-Za-z0-9_.-]+)=)(?P<secret>[^&#\s'\"<>]+)", re.I), "query"),
    # provider key shapes anywhere
    (re.compile(r"(?P<pre>)(?P<secret>\b(?:sk-ant-|sk-proj-|sk-|hf_|gsk_|xai-|ghp_|github_pat_|glpat-)[A-Za-z0-9_-]{12,})"), "key"),
    (re.compile(r"(?P<pre>)(?P<secret>\bAIza[0-9A-Za-z_-]{30,})"), "key"),
    (re.compile(r"(?P<pre>)(?P<secret>\bAKIA[0-9A-Z]{16}\b)"), "key"),
)


# a value under a name ending in `token` that is a plain count (stat lines: `#token: 8192`) is no secret;
# keys, secrets and passwords are masked even when they are digits (`--api-key 123456` is a real key)
_COUNT_NAME = re.compile(r"token$", re.I)
_COUNT = re.compile(r"\d{1,10}")


def is_secret_name(name: str) -> bool:
    """`api_key`, `--hf-token`, `VLLM_API_KEY`, `client_secret`: a name whose value is a secret."""
    return len(name) <= 200 and bool(_SECRET_END.search(name))


def _hit(m: re.Match[str], kind: str) -> str:
    """The replacement for one pattern match: the secret masked, or the match unchanged when the
    name it hangs on is not a secret's (`max_tokens=`, `--tokenizer`, `?limit=`)."""
    name = m.groupdict().get("name")
    if kind == "flag" and not (name or "").startswith("--"):
        return m.group(0)
    if kind in ("flag", "named") and not is_secret_name(name or ""):
        return m.group(0)
    if kind in ("flag", "named") and _COUNT_NAME.search(name or "") and _COUNT.fullmatch(m.group("secret")):
        return m.group(0)  # SGLang's `#token: 8192`, `#new-token: 512`: a count of tokens, not a token
    if kind == "query" and not (is_secret_name(name or "") or _QUERY_END.search(name or "")):
        return m.group(0)
    return m.group("pre") + _masked(m.group("secret"), kind)


_PLACEHOLDERS = {"empty", "none", "null", "dummy", "<token>", "your-api-key", "sk-xxx", "not-needed", "sk-no-key-required", "<set>"}
# (not-needed, sk-no-key-required: the keys docs tell users of keyless local servers to pass; <set>: host.py's mark)


def mask(secret: str) -> str:
    """Show a key only as its first 3 and last 4 characters; short values not at all."""
    s = secret.strip()
    if len(s) < 12:
        return "****"
    return f"{s[:3]}...{s[-4:]}"


FRAGMENT = 8  # this many characters of a known secret, anywhere, are masked


class Redactor:
    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # exact secrets, longest first, also with surrounding whitespace/quotes stripped, so a key
        # pasted with a newline or quotes is caught in every form it may take in an output
        forms: set[str] = set()
        cores: set[str] = set()
        for s in secrets:
            if not s:
                continue
            core = s.strip().strip("'\"").strip().removeprefix("Bearer ").strip()
            for form in (s, s.strip(), s.strip().strip("'\"").strip(), core):
                if len(form) >= 4 and form.lower() not in _PLACEHOLDERS:
                    forms.add(form)
            if len(core) >= FRAGMENT and core.lower() not in _PLACEHOLDERS:
                cores.add(core)
        self.secrets = sorted(forms, key=len, reverse=True)
        # every FRAGMENT-long piece of every secret: a truncated or split echo is found by them
        self.pieces = sorted({c[i : i + FRAGMENT] for c in cores for i in range(len(c) - FRAGMENT + 1)})

    def text(self, s: str) -> str:
        for secret in self.secrets:
            if secret in s:
                s = s.replace(secret, mask(secret))
        s = self._fragments(s)
        for pattern, kind in _PATTERNS:
            s = pattern.sub(lambda m, kind=kind: _hit(m, kind), s)
        return s

    def _fragments(self, s: str) -> str:
        """Mask every run of characters covered by pieces of a known secret (str.find per piece:
        C speed on long texts, where a Python loop over positions would not be)."""
        covered: list[tuple[int, int]] = []
        for piece in self.pieces:
            at = s.find(piece)
            while at >= 0:
                covered.append((at, at + FRAGMENT))
                at = s.find(piece, at + 1)
        if not covered:
            return s
        covered.sort()
        out, pos, start, end = [], 0, *covered[0]
        for a, b in covered[1:] + [(len(s) + 1, len(s) + 1)]:
            if a <= end:
                end = max(end, b)
                continue
            out += [s[pos:start], "****"]
            pos, start, end = end, a, b
        return "".join(out) + s[pos:]

    def obj(self, value: Any) -> Any:
        """Redact every string inside a JSON-able structure (keys included); a value under a key
        that names a secret (`api_key`, `--hf-token`, `password`) is masked whatever it looks like."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                self.text(str(k)): _masked(v, "key") if isinstance(v, str) and v and is_secret_name(str(k)) else self.obj(v)
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [self.obj(v) for v in value]
        return value


def _masked(secret: str, kind: str) -> str:
    if kind == "pw" or "..." in secret or secret == "****":
        return "****" if kind == "pw" else secret
    if secret.lower() in _PLACEHOLDERS:
        return secret
    return mask(secret)
