"""Where the key came from: a key typed on the command line is visible to every user of the
machine (`ps`, /proc/PID/cmdline) and lands in shell history and CI logs. On a shared GPU box
that is a leak, so it is a warning with the two ways that keep it off the command line."""

from __future__ import annotations

from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome


@check("access.key_source", "access", codes=["access.key_on_command_line"], needs=("settings",))
def key_source(facts: Facts) -> Outcome:
    """The API key did not come from the command line."""
    key = facts.settings.api_key if facts.settings else None
    if key is None or not key.value:
        raise NotApplicable("no API key configured")
    if not facts.settings.key_on_command_line:
        return Outcome(detail=f"key from {key.source}")
    return Outcome([Finding(
        "access.key_on_command_line",
        "the API key was passed with --api-key: any user of this machine can read it with `ps`, and shell history keeps it",
        [f"key {key.value} from {key.source}"],
        [Fix("Name the environment variable that holds it instead", "--api-key-env OPENAI_API_KEY"),
         Fix("Or read it from a file only you can read (a mounted secret)", "--api-key-file /run/secrets/llm-api-key")],
    )])  # fmt: skip
