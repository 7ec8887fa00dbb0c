"""Client-side stream failures as the clients' own sources word them, judged end to end (rank-1 code and its evidence):
the wordings r-access4 covers (Vercel AI SDK's NoOutputGeneratedError, Zed's ResponseStreamResult)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.findings import Finding
from tests import analysis


def findings_of(tmp_path: Path, text: str) -> list[Finding]:
    return analysis.findings_of(analysis.written(tmp_path, text))


NO_OUTPUT = "AI_NoOutputGeneratedError: No output generated. Check the stream for errors.\n"
# (case, log text, rank-1 code, a substring of its evidence)
CASES = [
    # streamText's flush with no finished step: the stream closed before the answer (vercel/ai stream-text.ts)
    ("vercel-no-output", NO_OUTPUT + "    at Object.flush (file:///app/node_modules/ai/dist/index.mjs:4893:27)\n",
     "access.streaming_broken", "No output generated"),
    # the provider's error the stream carried is the cause the wrapper masks
    ("vercel-no-output-429", NO_OUTPUT + "  [cause]: AI_APICallError: Too Many Requests\n    statusCode: 429,\n",
     "access.rate_limited", "Too Many Requests"),
    # Zed's OpenAI-compatible providers: an SSE line that is neither a chunk nor an error (crates/open_ai/src/open_ai.rs)
    ("zed-untagged-stream", "Error: data did not match any variant of untagged enum ResponseStreamResult\n",
     "access.streaming_broken", "ResponseStreamResult"),
]


@pytest.mark.parametrize(("name", "text", "code", "evidence"), CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path: Path, name: str, text: str, code: str, evidence: str) -> None:
    found = findings_of(tmp_path, text)
    assert found and found[0].code == code, [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence


def test_masked_wrapper_ranks_after_its_cause(tmp_path: Path) -> None:
    found = findings_of(tmp_path, NO_OUTPUT + "  [cause]: AI_APICallError: Too Many Requests\n    statusCode: 429,\n")
    wrapper = next(f for f in found if f.code == "access.streaming_broken")
    assert wrapper.severity == "warn"
    assert "NoOutputGeneratedError" in wrapper.title
