"""The real `llm-doctor run --only access` against a real LiteLLM proxy, healthy and with planted faults.

LiteLLM answers from its `mock_response` models (no upstream), so the bodies are LiteLLM's own:
401 "Invalid API key" from the custom_auth hook, 400 (not 404) "Invalid model name", a 429 from the
mock rate-limit error, a 500 "Connection error." from a model whose upstream is a closed port.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.peers.fixtures import DoctorRun, Peer, access_run, start_litellm

pytestmark = pytest.mark.timeout(240)

WRONG_KEY = "sk-llmdoctor-wrong-5b2e90d4c1"


def access(
    peer: Peer, home: Path, base: str, model: str = "fake-gpt", key: str | None = None, *extra: str, fmt: str = "json"
) -> DoctorRun:
    return access_run(peer, home, base, model, key, *extra, secrets=(WRONG_KEY,), fmt=fmt)


def rank1(run: DoctorRun, code: str) -> dict:
    assert run.findings, f"no finding (rc {run.rc}); peer answered nothing wrong?\n{run.stdout[:3000]}"
    first = run.findings[0]
    assert first["code"] == code, (
        f"rank 1 is {first['code']}, want {code}: {[f['code'] for f in run.findings]}"
    )
    return first


def evidence(finding: dict) -> str:
    return "\n".join(finding["evidence"])


def commands(finding: dict) -> list[str]:
    return [fix["command"] for fix in finding["fixes"] if fix.get("command")]


def check_status(run: DoctorRun) -> dict[str, str]:
    return {c["id"]: c["status"] for c in run.report["checks"]}


def test_healthy_gateway_passes_every_access_check(litellm_proxy: Peer, tmp_path: Path) -> None:
    run = access(litellm_proxy, tmp_path, litellm_proxy.v1)
    assert run.rc == 0, run.stdout[:3000]
    assert [f for f in run.findings if f["severity"] == "error"] == []
    status = check_status(run)
    for check in ("access.base_url", "access.key", "access.model", "access.request", "access.streaming"):
        assert status[check] == "pass", (check, status)
    stream = next(c for c in run.report["checks"] if c["id"] == "access.streaming")
    assert "data: [DONE]" in stream["detail"]  # LiteLLM's real SSE, three chunks then [DONE]


def test_wrong_key_is_rejected_with_the_gateways_message(litellm_proxy: Peer, tmp_path: Path) -> None:
    run = access(litellm_proxy, tmp_path, litellm_proxy.v1, key=WRONG_KEY)
    assert run.rc == 1
    first = rank1(run, "access.key_rejected")
    assert f"GET {litellm_proxy.v1}/models -> 401 Invalid API key" in evidence(first)
    assert "key sk-...d4c1 (from flag --api-key" in evidence(first)  # named only by its masked tail


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_wrong_key_in_human_formats_names_the_message_not_the_key(
    litellm_proxy: Peer, tmp_path: Path, fmt: str
) -> None:
    run = access(
        litellm_proxy, tmp_path, litellm_proxy.v1, "fake-gpt", WRONG_KEY, fmt=fmt
    )  # access() checks for keys
    assert run.rc == 1
    assert "access.key_rejected" in run.stdout and "Invalid API key" in run.stdout


@pytest.fixture(scope="module")
def litellm_without_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    with start_litellm(tmp_path_factory.mktemp("litellm-nodb"), custom_auth=False) as peer:
        yield peer


def test_wrong_key_on_a_proxy_without_db_is_still_key_rejected(
    litellm_without_db: Peer, tmp_path: Path
) -> None:
    """LiteLLM's most common small set-up (master_key, no database) answers a wrong key with
    400 "No connected db.": the doctor must call that a rejected key, not a bad request."""
    run = access(litellm_without_db, tmp_path, litellm_without_db.v1, key=WRONG_KEY)
    assert run.rc == 1
    first = rank1(run, "access.key_rejected")
    assert "-> 400 No connected db." in evidence(first)


def test_unknown_model_is_model_not_found_with_the_served_ids(litellm_proxy: Peer, tmp_path: Path) -> None:
    run = access(litellm_proxy, tmp_path, litellm_proxy.v1, model="gpt-nope")
    assert run.rc == 1
    first = rank1(run, "access.model_not_found")
    text = evidence(first)
    assert "-> 400 /chat/completions: Invalid model name passed in model=gpt-nope" in text  # 400, not 404
    assert "fake-gpt, rate-limited, dead-upstream" in text
    assert "--model fake-gpt" in commands(first)


def test_rate_limited_model_is_rate_limited(litellm_proxy: Peer, tmp_path: Path) -> None:
    run = access(litellm_proxy, tmp_path, litellm_proxy.v1, model="rate-limited")
    assert run.rc == 1
    first = rank1(run, "access.rate_limited")
    assert f"POST {litellm_proxy.v1}/chat/completions -> 429 litellm.RateLimitError" in evidence(first)


def test_dead_upstream_is_a_server_error(litellm_proxy: Peer, tmp_path: Path) -> None:
    run = access(litellm_proxy, tmp_path, litellm_proxy.v1, model="dead-upstream")
    assert run.rc == 1
    first = rank1(run, "access.server_error")
    text = evidence(first)
    assert f"POST {litellm_proxy.v1}/chat/completions -> 500" in text
    assert "OpenAIException - Connection error." in text


@pytest.mark.parametrize(
    ("suffix", "why"),
    [
        ("/v1/v1", "'/v1' is doubled"),
        ("/v1/chat/completions", "an endpoint path '/chat/completions' is pasted"),
    ],
)
def test_wrong_path_gives_the_base_url_that_answered(
    litellm_proxy: Peer, tmp_path: Path, suffix: str, why: str
) -> None:
    run = access(litellm_proxy, tmp_path, litellm_proxy.origin + suffix)
    assert run.rc == 1
    first = rank1(run, "access.base_url_invalid")
    assert why in evidence(first)
    assert f"GET {litellm_proxy.origin}{suffix}/models -> 404 Not Found" in evidence(first)
    assert f"--base-url {litellm_proxy.v1}" in commands(first)


def test_base_url_without_v1_is_fine_on_litellm(litellm_proxy: Peer, tmp_path: Path) -> None:
    """LiteLLM serves every OpenAI route both with and without /v1: no /v1 is not a fault here."""
    run = access(litellm_proxy, tmp_path, litellm_proxy.origin)
    assert run.rc == 0, run.stdout[:3000]
    assert "access.base_url_invalid" not in run.codes()
    assert check_status(run)["access.request"] == "pass"


def test_anthropic_stream_from_a_mock_model_is_not_sse(litellm_proxy: Peer, tmp_path: Path) -> None:
    """A real gateway quirk: with a mock model, /v1/messages answers `stream: true` with plain JSON."""
    run = access(litellm_proxy, tmp_path, litellm_proxy.origin, "fake-gpt", None, "--protocol", "anthropic")
    assert run.rc == 1
    first = rank1(run, "access.streaming_broken")
    assert "application/json" in first["title"]
    assert check_status(run)["access.request"] == "pass"  # the non-streamed /v1/messages works
