"""Access failures a person states in words ("the request 401s", "the stream arrives all at once behind
nginx"): reported like the load layer's (checks/load/stated.py), below what a probe or a client log shows."""

from __future__ import annotations

import re
from dataclasses import replace

from llm_doctor.checks.access.client_log import RELAY_STATUS, RELAYED_REFUSAL
from llm_doctor.checks.load.stated import ABOUT, judge
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Outcome

# a 502 told in words where the log names the proxy variables (clears, sets or prints HTTP_PROXY/HTTPS_PROXY/NO_PROXY):
# the proxy the environment sends the client through answered, as access.client_log reads the same 502 in a log line
BAD_GATEWAY = re.compile(r"\b502\b|Bad Gateway", re.I)


@check("access.stated", "access", codes=[c for c in ABOUT if c.startswith("access.")], needs=("said",))
def stated(facts: Facts) -> Outcome:
    """Every access failure a person states in words is reported, ranked below what a probe shows. A status read from a
    relay's error line that quotes the upstream's refusal of the request (client_log.RELAYED_REFUSAL) is no statement of
    a rate limit, a 5xx or a timeout: the relay's status is not the upstream's."""
    said = [s for s in facts.said if not (s.code in RELAY_STATUS and RELAYED_REFUSAL.search(s.text))]
    if facts.logs is not None and facts.logs.setup.proxy_named:
        said = [replace(s, code="access.proxy_failed") if s.code == "access.server_error" and BAD_GATEWAY.search(s.text) else s
                for s in said]
    return judge(replace(facts, said=said), "access")
