"""The model ID: configured, and one the server serves (from `GET /models` and the server's own
answer to the chat request). A typo gets the closest served IDs, compared case-insensitively and
by the name after the organisation prefix, since `Llama-3.1-8B-Instruct` vs
`meta-llama/Llama-3.1-8B-Instruct` is the usual mistake.
"""

from __future__ import annotations

import difflib

from llm_doctor.checks.access import transcript as t
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.access import EndpointFacts, ProbeStep, SettingsFacts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

CODES = ("access.model_id_missing", "access.model_not_found")
REQUEST_STEPS = ("chat", "candidate_chat", "messages", "candidate_messages")


@check("access.model", "access", codes=CODES, needs=("settings", "endpoint"), after=("access.key",))
def model(facts: Facts) -> Outcome:
    """Model ID configured, and served (closest served IDs when it is not)."""
    settings = facts.settings or SettingsFacts()
    ep = facts.endpoint
    served = ep.served_models if ep else None
    wanted = (settings.model.value or "").strip()
    var = "ANTHROPIC_MODEL" if (ep.protocol if ep else settings.protocol.value) == "anthropic" else "OPENAI_MODEL"
    if not wanted:
        evidence = ["no model in --model, OPENAI_MODEL, ANTHROPIC_MODEL or client config files"]
        fixes = []
        if served:
            evidence.append(f"the server serves: {', '.join(served[:10])}")
            fixes.append(Fix("Ask for a served model", f"--model {served[0]}"))
            fixes.append(Fix("Same for clients", f"export {var}={served[0]}"))
        else:
            base = (ep.working_base_url or ep.base_url).rstrip("/") if ep else ""
            fixes.append(Fix("Give the served model name with --model: GET /v1/models lists them", f"curl -sS {base}/models" if base else None))
        return Outcome([Finding("access.model_id_missing", "no model ID is configured", evidence, fixes)])
    answer = _answer(ep)
    said_missing = answer is not None and bool(answer.detail.get("model_error"))
    if served is not None and wanted not in served:
        accepted = answer is not None and answer.status == 200
        return Outcome([_not_found(settings, ep, wanted, served, answer, var, severity="warn" if accepted else "")])
    if said_missing and answer is not None:
        return Outcome([_not_found(settings, ep, wanted, served or [], answer, var)])
    if served is None and answer is None:
        raise NotApplicable("neither a model list nor an answer to a request to judge the model ID by")
    return Outcome([], f"model {wanted!r} is served")


def closest(wanted: str, served: list[str], n: int = 3) -> list[str]:
    """Served IDs most like `wanted`: same name ignoring case or org prefix first, then similarity."""
    low = wanted.lower()
    base = low.rsplit("/", 1)[-1]
    exact = [s for s in served if s.lower() == low or s.lower().rsplit("/", 1)[-1] == base]
    by_lower = {s.lower(): s for s in served}
    similar = [by_lower[m] for m in difflib.get_close_matches(low, list(by_lower), n=n, cutoff=0.4)]
    bases = {s.lower().rsplit("/", 1)[-1]: s for s in served}
    similar += [bases[m] for m in difflib.get_close_matches(base, list(bases), n=n, cutoff=0.5)]
    return list(dict.fromkeys(exact + similar))[:n]


def _not_found(
    settings: SettingsFacts,
    ep: EndpointFacts | None,
    wanted: str,
    served: list[str],
    answer: ProbeStep | None,
    var: str,
    severity: str = "",
) -> Finding:
    near = closest(wanted, served)
    evidence = [t.setting_line("model", settings.model)]
    if served:
        evidence.append(f"GET /models lists {len(served)}: {', '.join(served[:10])}")
    if answer is not None:
        evidence.append(t.line(answer))
    fixes = []
    if near:
        evidence.append(f"closest served: {', '.join(near)}")
        fixes += [Fix(f"Ask for the served ID {near[0]!r}", f"--model {near[0]}"), Fix("Same for clients", f"export {var}={near[0]}")]
    elif served:
        fixes.append(Fix("Ask for a served model", f"--model {served[0]}"))
    engine, flag = _rename_flag(ep)
    fixes.append(Fix(f"Or serve the model under the name clients use ({engine})", f"{flag} {wanted}"))
    title = f"the model {wanted!r} is not served" + (f"; did you mean {near[0]!r}?" if near else "")
    if severity == "warn":
        title = f"the model {wanted!r} is not in GET /models, but the server answered it anyway (it serves one model under any name)"
    return Finding("access.model_not_found", title, evidence, fixes, severity=severity)


# `owned_by` in GET /models names the server; each engine has its own flag for the served name
RENAME_FLAGS = {
    "vllm": ("vLLM", "--served-model-name"),
    "sglang": ("SGLang", "--served-model-name"),
    "llamacpp": ("llama-server", "--alias"),
}


def _rename_flag(ep: EndpointFacts | None) -> tuple[str, str]:
    models = t.find_last(ep, "models", "candidate_models") if ep else None
    body = models.body_excerpt if models else ""
    for owner, (engine, flag) in RENAME_FLAGS.items():
        if f'"owned_by":"{owner}"' in body.replace(" ", ""):
            return engine, flag
    return "vLLM/SGLang", "--served-model-name"


def _answer(ep: EndpointFacts | None) -> ProbeStep | None:
    if ep is None:
        return None
    return t.find_last(ep, *REQUEST_STEPS)
