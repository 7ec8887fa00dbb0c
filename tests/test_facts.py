"""Facts survive a JSON round-trip: that is what makes offline analysis of a bundle exact."""

from __future__ import annotations

import json

from llm_doctor.facts import Facts
from llm_doctor.facts.access import EndpointFacts, ProbeStep, Setting, SettingsFacts
from llm_doctor.facts.logs import LogEvent, LogFacts


def test_round_trip_keeps_types() -> None:
    facts = Facts(
        settings=SettingsFacts(base_url=Setting("http://h:8000/v1", "flag --base-url")),
        endpoint=EndpointFacts(base_url="http://h:8000/v1", steps=[ProbeStep("dns", ok=True, duration_ms=1)]),
        logs=LogFacts(sources=["a.log"], events=[LogEvent("cuda_oom", values={"gib": 2.5})]),
        notes=["n"],
    )
    again = Facts.from_dict(json.loads(json.dumps(facts.to_dict())))
    assert again == facts
    assert isinstance(again.endpoint.steps[0], ProbeStep)
    assert isinstance(again.logs.events[0], LogEvent)


def test_unknown_keys_are_ignored() -> None:
    again = Facts.from_dict({"schema": "llm-doctor.facts/1", "future_section": {"x": 1}, "notes": []})
    assert again.settings is None
