"""Access failures a person states in words ("the request 401s", "the stream arrives all at once behind
nginx"): reported like the load layer's (checks/load/stated.py), below what a probe or a client log shows."""

from __future__ import annotations

from llm_doctor.checks.load.stated import ABOUT, judge
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Outcome


@check("access.stated", "access", codes=[c for c in ABOUT if c.startswith("access.")], needs=("said",))
def stated(facts: Facts) -> Outcome:
    """Every access failure a person states in words is reported, ranked below what a probe shows."""
    return judge(facts, "access")
