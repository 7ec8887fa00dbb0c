"""access-layer checks, registered here in the order a request meets its problems: base URL,
network, key, model, protocol, request, streaming. That is their order in the report (ties rank
by it) and the order their `after=` dependencies need, so it is spelled out rather than left to
the alphabetical walk of the checks package. `ready` (--wait-ready) comes first: nothing else
answers before the server is up."""

import importlib

ORDER = ("ready", "base_url", "network", "key", "key_source", "model", "protocol", "request", "streaming")

for _name in ORDER:
    importlib.import_module(f"llm_doctor.checks.access.{_name}")
