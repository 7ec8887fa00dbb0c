"""The API key: present, well-formed, accepted.

A key pasted with a newline, quotes or a `Bearer ` prefix breaks clients in confusing ways (an
"illegal header value" traceback, or a 401 for a key that is right). The probe sends the key
cleaned, so this check can say both what is wrong with it and whether the cleaned key works.
A missing key is only an error when the server asks for one: local vLLM/llama.cpp often need none.
"""

from __future__ import annotations

from llm_doctor.checks.access import transcript as t
from llm_doctor.checks.access.provider_words import QUOTA
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.access import EndpointFacts, KeyTraits, ProbeStep, SettingsFacts
from llm_doctor.findings import Finding, Fix, Outcome

CODES = ("access.key_missing", "access.key_malformed", "access.key_rejected")
# hosts whose keys have a known shape (the provider's own API)
PROVIDER_HOSTS = {
    "api.openai.com": "openai",
    "api.anthropic.com": "anthropic",
    "openrouter.ai": "openrouter",
    "api.groq.com": "groq",
    "api.x.ai": "xai",
    "generativelanguage.googleapis.com": "google",
    "router.huggingface.co": "huggingface",
}
NAMES = {"openai": "OpenAI", "anthropic": "Anthropic", "openrouter": "OpenRouter", "groq": "Groq", "xai": "xAI",
         "google": "Google", "huggingface": "Hugging Face", "github": "GitHub"}  # fmt: skip


@check("access.key", "access", codes=CODES, needs=("settings", "endpoint"))
def key(facts: Facts) -> Outcome:
    """API key present (when the server asks for one), well-formed, and accepted."""
    settings = facts.settings or SettingsFacts()
    ep = facts.endpoint
    rejected = _rejection(ep)
    var = _key_var(settings, ep)
    if not settings.api_key.value:
        if rejected is not None:
            return Outcome([Finding(
                "access.key_missing", "no API key is configured, and the server asks for one",
                [f"no key: {settings.api_key.source}" if settings.api_key.source else
                 "no key in --api-key, OPENAI_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_API_KEY or client config files", t.line(rejected)],
                [Fix("Pass the key the server was started with (vLLM: the value of VLLM_API_KEY or of its `--api-key`), "
                     "from a variable or a file, never on the command line", f"--api-key-env {var}"),
                 Fix("Or set it for clients (type the key at the prompt: it stays out of the shell history)", f"read -rs {var} && export {var}")],
                explains=["access.key_rejected"],
            )])  # fmt: skip
        host = t.host_of(ep.base_url) if ep else ""
        if host in PROVIDER_HOSTS:
            return Outcome([Finding(
                "access.key_missing", f"no API key is configured for {host}", ["no key in flags, environment or client config files"],
                [Fix("Set the provider's key (type it at the prompt: it stays out of the shell history)", f"read -rs {var} && export {var}")],
            )])  # fmt: skip
        if ep is None or not t.http_steps(ep):
            return Outcome([], "no key configured (not needed unless the server asks; it was not reached)")
        return Outcome([], "no key configured, and the server did not ask for one")
    traits = settings.key_traits or KeyTraits()
    shown = f"key {settings.api_key.value} (from {settings.api_key.source}, {traits.length} characters)"
    malformed = _shape_problems(traits)
    expected = PROVIDER_HOSTS.get(t.host_of(ep.base_url)) if ep else None
    if expected and traits.provider_shape and traits.provider_shape != expected:
        malformed.append(f"it has the shape of {NAMES.get(traits.provider_shape, traits.provider_shape)} keys, but {t.host_of(ep.base_url)} takes {NAMES[expected]} keys")
    if malformed:
        evidence = [shown, *malformed, f"{traits.clean_length} characters once that is removed"]
        accepted = _accepted(ep)
        if ep and ep.key_sent == "cleaned" and accepted is not None:
            evidence.append(f"with that removed the server accepted the key: {accepted.target} -> {accepted.status}")
        elif rejected is not None:
            evidence.append(t.line(rejected))
        return Outcome([Finding(
            "access.key_malformed", f"the API key is malformed: {malformed[0]}", evidence, _clean_fixes(settings, traits),
            explains=["access.key_rejected"],
        )])  # fmt: skip
    if rejected is not None:
        evidence = [shown, t.line(rejected)]
        if traits.placeholder:
            evidence.append("the key is a placeholder, not a real key")
        if traits.provider_shape and traits.provider_shape not in ("", "openai") and not expected:
            evidence.append(f"it has the shape of {NAMES.get(traits.provider_shape, traits.provider_shape)} keys")
        status = rejected.status
        title = "the server rejected the API key" if status == 401 else "the key is not allowed to use this route or model (403)"
        return Outcome([Finding(
            "access.key_rejected", f"{title}: {t.server_says(rejected)}"[:300], evidence,
            [Fix("Use the key the server expects (vLLM: the value of VLLM_API_KEY or of its `--api-key`; a gateway: a key it issued); "
                 "type it at the prompt", f"read -rs {var} && export {var}"),
             Fix("Check which key is in effect and where it comes from", f"llm-doctor run --only access.key --base-url {ep.base_url if ep else 'URL'}")],
        )])  # fmt: skip
    accepted = _accepted(ep)
    if accepted is None:
        return Outcome([], f"{shown} is well-formed; no request got through to show it accepted")
    return Outcome([], f"{shown} accepted ({accepted.target} -> {accepted.status})")


def _shape_problems(traits: KeyTraits) -> list[str]:
    out = []
    if traits.newline:
        out.append("it contains a newline (pasted from a file or `echo` output)")
    elif traits.leading_or_trailing_whitespace:
        out.append("it has leading or trailing whitespace")
    if traits.quoted:
        out.append("it is wrapped in quotes, which became part of the value")
    if traits.bearer_prefix:
        out.append("it starts with 'Bearer ' (clients add that prefix themselves)")
    if traits.inner_whitespace:
        out.append("it contains whitespace inside the key")
    return out


def _clean_fixes(settings: SettingsFacts, traits: KeyTraits) -> list[Fix]:
    source = settings.api_key.source
    env = t.env_var_of(source)
    if env:
        cmd = f"export {env}=\"$(printf %s \"${env}\" | tr -d \"[:space:]\\\"'\")\""
        if traits.bearer_prefix:
            cmd = f"export {env}=\"${{{env}#Bearer }}\"  # then strip spaces/quotes if any remain"
        return [Fix(f"Remove it from {env}", cmd)]
    if source.startswith("file "):
        return [Fix(f"Edit {source.removeprefix('file ')}: the key itself only, no spaces, quotes or 'Bearer '")]
    return [Fix(f"Pass --api-key the key itself: {traits.clean_length} characters, without spaces, quotes, a newline or 'Bearer '")]


def _key_var(settings: SettingsFacts, ep: EndpointFacts | None) -> str:
    env = t.env_var_of(settings.api_key.source)
    if env:
        return env
    protocol = ep.protocol if ep else (settings.protocol.value or "openai")
    return "ANTHROPIC_AUTH_TOKEN" if protocol == "anthropic" else "OPENAI_API_KEY"


def _rejection(ep: EndpointFacts | None) -> ProbeStep | None:
    if ep is None:
        return None
    # (a 401/403 that says the account's balance or quota is spent refuses the account, not the key: access.request)
    return next((s for s in t.http_steps(ep) if (s.status in (401, 403) and not QUOTA.search(t.server_says(s))) or _litellm_no_db(s)), None)


def _litellm_no_db(step: ProbeStep) -> bool:
    """LiteLLM proxy with a master key and no database answers any other key with 400 "No connected db."."""
    return step.status == 400 and "no connected db" in str(step.detail.get("error_message", "")).lower()


def _accepted(ep: EndpointFacts | None) -> ProbeStep | None:
    if ep is None:
        return None
    return next((s for s in t.http_steps(ep) if s.status is not None and 200 <= s.status < 300), None)
