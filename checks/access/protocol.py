"""OpenAI- vs Anthropic-style protocol: when this protocol's routes are missing but the other's
answer, the client is pointed at the wrong kind of endpoint. Claude Code needs an
Anthropic-compatible base URL (it appends `/v1/messages`); Cline, Cursor, Continue and the OpenAI
SDK need an OpenAI-compatible one (ending in `/v1`, they append `/chat/completions`).
"""

from __future__ import annotations

from llm_doctor.checks.access import transcript as t
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

SYMPTOMS = ["access.base_url_invalid", "access.model_not_found", "access.response_invalid", "access.key_rejected"]


@check("access.protocol", "access", codes=("access.protocol_mismatch",), needs=("endpoint",), after=("access.network",))
def protocol(facts: Facts) -> Outcome:
    """The endpoint speaks the protocol the client uses (OpenAI chat vs Anthropic messages)."""
    ep = t.endpoint(facts)
    root = t.origin_of(ep.base_url) if ep.base_url else ""
    sniff_messages = t.find(ep, "sniff_messages")
    sniff_chat = t.find(ep, "sniff_chat")
    chat = t.find(ep, "chat")
    if ep.protocol != "anthropic" and t.answered(sniff_messages) and sniff_messages is not None:
        base = sniff_messages.target.split(" ", 1)[-1].removesuffix("/v1/messages")
        return Outcome([Finding(
            "access.protocol_mismatch",
            "the endpoint speaks the Anthropic Messages API, not OpenAI chat completions",
            [t.line(chat) if chat else "no OpenAI chat route answered", t.line(sniff_messages)],
            [Fix("Claude Code / Anthropic SDK: point it at this endpoint", f"export ANTHROPIC_BASE_URL={base}"),
             Fix("Diagnose it as an Anthropic endpoint", f"llm-doctor run --protocol anthropic --base-url {base}"),
             Fix("OpenAI-style clients (Cline, Cursor, Continue) need an OpenAI-compatible gateway in front, e.g. LiteLLM proxy")],
            explains=SYMPTOMS,
        )])  # fmt: skip
    if ep.protocol == "anthropic" and sniff_chat is not None and (t.answered(sniff_chat) or _listed(ep)):
        base = sniff_chat.target.split(" ", 1)[-1].removesuffix("/chat/completions")
        messages = t.find(ep, "messages")
        return Outcome([Finding(
            "access.protocol_mismatch",
            "the endpoint speaks the OpenAI chat completions API, not the Anthropic Messages API",
            [t.line(messages) if messages else "no /v1/messages route answered", t.line(sniff_chat)],
            [Fix("OpenAI-style clients (Cline, Cursor, Continue, OpenAI SDK): use", f"export OPENAI_BASE_URL={base}"),
             Fix("Diagnose it as an OpenAI endpoint", f"llm-doctor run --protocol openai --base-url {base}"),
             Fix("Claude Code needs /v1/messages: put an Anthropic-compatible gateway in front (LiteLLM proxy serves /v1/messages)")],
            explains=SYMPTOMS,
        )])  # fmt: skip
    if chat is not None and chat.status == 200 and chat.detail.get("content_blocks") is not None:
        return Outcome([Finding(
            "access.protocol_mismatch", "the chat completions route answered in the Anthropic message shape",
            [t.line(chat)], [Fix("Use an Anthropic client for it", f"export ANTHROPIC_BASE_URL={root}")], explains=SYMPTOMS,
        )])  # fmt: skip
    if not t.http_steps(ep):
        raise NotApplicable("no HTTP answer to judge the protocol by")
    return Outcome([], f"{ep.protocol} routes answer")


def _listed(ep) -> bool:  # type: ignore[no-untyped-def]
    models = t.find(ep, "sniff_models")
    return models is not None and models.ok
