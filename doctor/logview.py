"""The log events one check judges: the run being diagnosed, restricted to the kinds it declared.

The engine builds one LogView per check from the check's `events=` declaration and hands it over,
so a check never picks its own run or reads a kind it did not declare (asking for one is a bug and
raises). Which run: a log may hold several starts of the engine; the last one that failed is the
one the user is looking at, earlier failures are mentioned in the evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_doctor.facts.logs import LogEvent, LogFacts, LogSetup
from llm_doctor.logparse.chains import DEATHS
from llm_doctor.logparse.failures import KINDS as GENERIC_KINDS


def judged_run(logs: LogFacts) -> int:
    """The last run with a fatal event, else the last run. A start the deadline cut the read in,
    whose only failures so far are ERROR-level lines (`error_line`: engines log those and go on), is
    not judged over an earlier start that really failed: its end was never read (a crash loop cut
    in the middle of its next start-up would otherwise hide the crash every start ended in)."""
    fatal = {e.run for e in logs.events if e.fatal}
    cut = logs.cut_run
    if cut in fatal and len(fatal) > 1 and all(e.kind == "error_line" for e in logs.events if e.fatal and e.run == cut):
        fatal.discard(cut)
    return max(fatal) if fatal else logs.runs - 1


@dataclass(frozen=True)
class LogView:
    logs: LogFacts
    declared: frozenset[str]

    @property
    def run(self) -> int:
        return judged_run(self.logs)

    @property
    def setup(self) -> LogSetup:
        return self.logs.setup

    def events(self, *kinds: str) -> list[LogEvent]:
        """Events of these kinds (all declared ones when none named) in the judged run."""
        unknown = set(kinds) - self.declared
        if unknown:
            raise ValueError(f"the check did not declare the event kind(s) {', '.join(sorted(unknown))}")
        wanted = set(kinds) or self.declared
        run = self.run
        return [e for e in self.logs.events if e.run == run and e.kind in wanted]

    def fatal_kinds(self) -> set[str]:
        return {e.kind for e in self.events() if e.fatal}

    def other_failures(self) -> set[str]:
        """Fatal kinds of the judged run that this check did not declare and that a rule recognised,
        and the generic kinds that say another failure happened: an uncaught exception no rule knows
        that ended the run, or a wrapper saying a child failed ("Received sigquit from a child
        process"): "is something else the cause?" without reading it (a shell's `Killed` after a
        child's exception is the launcher killing itself, not the kernel's OOM killer)."""
        run = self.run
        return {e.kind for e in self.logs.events if e.run == run and e.fatal and e.kind not in self.declared
                and (e.kind not in GENERIC_KINDS or _another_failure(e))}

    def died_unexplained(self) -> bool:
        """The judged run failed and only wrappers say so: every fatal event is a cascade ("EngineCore failed to
        start", a worker's or engine core's death, doctor.logparse.chains.WRAPPERS) whose own error is not in the log
        (a process killed from outside raises none)."""
        run = self.run
        fatal = [e for e in self.logs.events if e.run == run and e.fatal]
        return bool(fatal) and all(e.values.get("cascade") for e in fatal)

    def failed_before(self, found: list[LogEvent]) -> bool:
        """Whether the judged run raised an error of its own (an exception, or a failure another check judges; not a bare
        ERROR line, not a wrapper) before every one of `found`, in the same file: what `found` says came after it."""
        run, first = self.run, min(((e.source, e.line_no) for e in found), default=None)
        return first is not None and any(
            e.run == run and e.fatal and e.kind not in self.declared and e.kind != "error_line" and not e.values.get("cascade")
            and e.source == first[0] and e.line_no < first[1] for e in self.logs.events)

    def earlier_runs(self) -> list[str]:
        """One evidence line about failed earlier starts in the same log, if any."""
        run = self.run
        earlier = sorted({(e.run, e.kind) for e in self.logs.events if e.fatal and e.run < run})
        folded = self.logs.folded_runs
        if not earlier and not folded:
            return []
        runs = sorted({r for r, _ in earlier})
        kinds = sorted({k for _, k in earlier} | set(self.logs.folded_kinds))
        shown = ", ".join(str(r + 1) for r in runs)
        older = f"{folded} older start(s) folded into counts" if folded else ""
        return [
            f"the log holds {self.logs.runs} starts of the engine; this is the last failed one "
            f"(start {run + 1}); earlier failed start(s) {'; '.join(x for x in (shown, older) if x)} showed: {', '.join(kinds)}"
        ]


def _another_failure(e: LogEvent) -> bool:
    """A wrapper says something below it failed; one that reports a death (doctor.logparse.chains.DEATHS) says
    only that a process died, which a kill in the same run explains."""
    if e.values.get("cascade"):
        return e.values["cascade"] not in DEATHS
    return e.kind == "exception" and not e.values.get("then_served")


def tier(e: LogEvent) -> str:
    """How the event was recognised: a rule's template (maybe inside a wrapper, see
    doctor.logparse.chains), a keyword family, or nothing (`unrecognised`)."""
    if e.values.get("tier"):
        return str(e.values["tier"])
    return "unrecognised" if e.kind in GENERIC_KINDS else "template"


def where(e: LogEvent) -> str:
    """`source:line` of an event, as its quoted lines start."""
    return f"{e.source}:{e.line_no}" if e.source else f"line {e.line_no}"


def evidence(found: list[LogEvent], limit: int = 4) -> list[str]:
    """The quoted lines, with where they are and how often they repeat (a repeated message: its
    first line, and its last when that differs), then which tier recognised them."""
    out = []
    for e in found[:limit]:
        times = f" (x{e.count})" if e.count > 1 else ""
        for line in e.lines:
            out.append(f"{where(e)}{times}: {line}")
        if e.last_line:
            out.append(f"{e.source + ':' if e.source else 'line '}{e.last_line_no} (last of them): {e.last_line}")
    if len(found) > limit:
        out.append(f"... and {len(found) - limit} more such lines")
    tiers = list(dict.fromkeys(tier(e) for e in found[:limit]))
    if tiers:
        out.append(f"recognised by: {'; '.join(tiers)}")
    return out
