"""An HTTP error status a client states is a failure in whatever case and brackets a tool prints it: Claude Code's
"API Error: 400", and the same words from tools that lower-case them or bracket the status ("Anthropic API error:
[422] Unprocessable Content", the Copilot OAI-compatible extension of
https://github.com/JohnnyZ93/oai-compatible-copilot/issues/161). Before, those lines came out "No problems found"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis import findings_of, written

STATED = [
    'Anthropic API error: [422] Unprocessable Content {"detail":[{"type":"missing","loc":["body","max_tokens"],'
    '"msg":"Field required"}]}',
    "Reason: API error: 422 Unprocessable Content",
    "Anthropic API error: 422 Unprocessable Content",
    "request failed: status code (500) upstream",
]


@pytest.mark.parametrize("line", STATED)
def test_a_stated_error_status_is_never_an_all_clear(tmp_path: Path, line: str) -> None:
    findings = findings_of(written(tmp_path, line + "\n"))
    assert findings, "a stated 4xx/5xx came out as no finding"
    assert findings[0].code.startswith("access."), findings[0].code

