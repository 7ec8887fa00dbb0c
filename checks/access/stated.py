"""Access failures a person states in words ("the request 401s", "the stream arrives all at once behind
nginx"): reported like the load layer's (checks/load/stated.py), below what a probe or a client log shows."""

from __future__ import annotations

import re
from dataclasses import replace

from llm_doctor.checks.load.stated import ABOUT, judge
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Outcome

# a 502 told in words where the log names the proxy variables (clears, sets or prints HTTP_PROXY/HTTPS_PROXY/NO_PROXY):
# the proxy the environment sends the client through answered, as access.client_log reads the same 502 in a log line
BAD_GATEWAY = re.compile(r"\b502\b|Bad Gateway", re.I)


@check("access.stated", "access", codes=[c for c in ABOUT if c.startswith("access.")], needs=("said",))
def stated(facts: Facts) -> Outcome:
    """Every access failure a person states in words is reported, ranked below what a probe shows."""
    if facts.logs is not None and facts.logs.setup.proxy_named:
        facts = replace(facts, said=[replace(s, code="access.proxy_failed") if s.code == "access.server_error"
                                     and BAD_GATEWAY.search(s.text) else s for s in facts.said])
    return judge(facts, "access")
