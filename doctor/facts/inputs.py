"""What part of the input was not read or judged: the facts behind `doctor.input_incomplete`.

A report is only "ok" when everything asked was read. A log cut by the deadline or a size cap, a
truncated gzip, a file among several that could not be read: each is recorded here by the
collector that met it, with the bytes read and the time spent, so the finding can say what is
missing and compute how long a full read would take.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class InputGap:
    source: str  # file, `docker logs X`, <stdin>
    reason: str  # what happened, in words
    bytes_read: int | None = None
    bytes_total: int | None = None  # when known (a regular file)
    seconds: float | None = None  # time spent reading it before the cut
    # a gap that only matters when no check found anything (a launch command with none of the run's
    # output): the report would otherwise vouch for what it was not shown; beside a finding it is noise
    unless_judged: bool = False
