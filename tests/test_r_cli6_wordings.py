"""Client-side failures r-cli6 covers, judged end to end (rank-1 code, its evidence and its first fix): HTTP-library
wordings read in the library's source, and the layer of a failure no rule knows when a person's sentence names the
HTTP status a client got."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.findings import Finding
from tests import analysis

RESPONSE_FIX = "Check the base URL points at the API (…/v1) and nothing in between rewrites the answer"
SEARCH = "Search for this exact error message"


def findings_of(tmp_path: Path, text: str) -> list[Finding]:
    return analysis.findings_of(analysis.written(tmp_path, text))


# (name, log text, rank-1 code, a piece of its evidence, its first fix's summary, its command)
CASES = [
    # reqwest src/error.rs Kind::Decode, printed through a Rust client's Debug/Display of its error
    ("reqwest-decode-bare", 'Error: Reqwest("error decoding response body")\n', "access.response_invalid",
     "error decoding response body", RESPONSE_FIX, None),
    ("reqwest-decode-serde", "Error: error decoding response body: expected value at line 1 column 1\n", "access.response_invalid",
     "expected value at line 1 column 1", RESPONSE_FIX, None),
    # Open WebUI's `detail = f"Ollama: {e}"` around Ollama's 400 for an empty model field (server/routes.go)
    ("open-webui-no-model", "Ollama: model is required\n", "access.model_id_missing", "Ollama: model is required",
     "Set the model in the client (the served name, see GET /v1/models)", None),
    # a client tool's catch-all before the provider's error it relays (DeepSeek's 402 "Insufficient Balance")
    ("catch-all-quota", "Something went wrong: Insufficient Balance\n", "access.quota_exceeded", "Insufficient Balance",
     "Add credit / raise the quota for this key's account, or use another key", None),
    # undici's fetch() rejection printed without its cause (lib/web/fetch/index.js): no HTTP answer came
    ("undici-fetch-failed-alone", "Error calling Ollama: TypeError: fetch failed\n", "access.connect_failed", "TypeError: fetch failed",
     "Start the server / fix host and port; from another machine bind it with --host 0.0.0.0 and open the port", None),
    # ... and printed with it: the cause (lib/core/errors.js HeadersTimeoutError) is the failure, not the wrapper
    ("undici-fetch-failed-cause", "Error generating article: TypeError: fetch failed\n    at node:internal/deps/undici/undici:13185:13 {\n"
     "  [cause]: HeadersTimeoutError: Headers Timeout Error\n", "access.timeout", "Headers Timeout Error",
     "Raise the client timeout or stream the response (long generations): headersTimeout / bodyTimeout of the undici Agent that "
     "fetch uses", None),
    # a person's sentence naming the status a client got: the client's side, the access layer's
    ("prose-400", "Calling the endpoint from my script results in a 400 error\n", "access.unrecognized_failure",
     "results in a 400 error", SEARCH, '"Calling the endpoint from my script results in a error"'),
    ("prose-404-late", "I am using this library to build a tool connected to a local model which needs the responses method that "
     "belongs to an API most local servers do not implement, and I tried two small models and a third one, but it fails "
     "with 404 API\n", "access.unrecognized_failure", "fails with 404 API", SEARCH, None),
]


@pytest.mark.parametrize(("name", "text", "code", "evidence", "fix", "command"), CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path: Path, name: str, text: str, code: str, evidence: str, fix: str, command: str | None) -> None:
    found = findings_of(tmp_path, text)
    assert found and found[0].code == code, [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence
    assert found[0].fixes[0].summary == fix
    if command is not None:
        assert found[0].fixes[0].command == command


def test_stream_cut_inside_decode_stays_the_stream(tmp_path: Path) -> None:
    """reqwest wraps a body cut mid-read in the same Kind::Decode words: hyper's cause after them names the failure."""
    found = findings_of(tmp_path, "Error: error decoding response body: error reading a body from connection: "
                             "end of file before message length reached\n")
    assert found[0].code == "access.streaming_broken", [f.code for f in found]


def test_model_download_404_stays_the_engines(tmp_path: Path) -> None:
    """A 404 while fetching the model's files is the engine's start-up failing, not a client's answer."""
    found = findings_of(tmp_path, "Fetching the weights from huggingface fails with a 404 error\n")
    assert found and found[0].code == "load.unrecognized_failure", [f.code for f in found]



# a base URL configured with the endpoint path in it: openai-python (`_build_request`) and the other OpenAI-style clients
# append `/chat/completions` (or `/embeddings`) themselves, so the request goes to the path twice
NOT_JSON = "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"  # CPython json/decoder.py, the body was no JSON
PASTED = [
    ("chat-path-not-json", 'base_url="http://localhost:8000/v1/chat/completions"\n' + NOT_JSON,
     "configured base URL http://localhost:8000/v1/chat/completions"),
    # openai-python 0.28 api_requestor.py handle_error_response: `error_data = resp["error"]` on a body with no error object
    ("embeddings-path-keyerror", 'openai.api_base = "http://localhost:8000/v1/embeddings"\nKeyError: \'error\'\n',
     "configured base URL http://localhost:8000/v1/embeddings"),
]


@pytest.mark.parametrize(("name", "text", "evidence"), PASTED, ids=[c[0] for c in PASTED])
def test_pasted_endpoint_in_base_url(tmp_path: Path, name: str, text: str, evidence: str) -> None:
    found = findings_of(tmp_path, text)
    assert found and found[0].code == "access.base_url_invalid", [f.code for f in found]
    assert any(line.startswith(evidence) for line in found[0].evidence), found[0].evidence
    assert found[0].fixes[0].command == "OPENAI_BASE_URL=http://localhost:8000/v1"


def test_api_root_base_url_keeps_the_body_finding(tmp_path: Path) -> None:
    """The same failure under a base URL that is the API's root: nothing says the path is wrong."""
    found = findings_of(tmp_path, 'base_url="http://localhost:8000/v1"\n' + NOT_JSON)
    assert [f.code for f in found][:1] == ["access.response_invalid"]


def test_pasted_endpoint_does_not_explain_a_rejected_key(tmp_path: Path) -> None:
    """A 401 is the key's answer whatever the path: the pasted endpoint is no cause of it, and is not reported over it."""
    found = findings_of(tmp_path, 'base_url="http://localhost:8000/v1/chat/completions"\nopenai.AuthenticationError: Error code: 401 - '
                                  '{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}\n')
    assert [f.code for f in found] == ["access.key_rejected"]
