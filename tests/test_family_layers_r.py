"""Keyword families that must pick the layer the wording's source means (doctor/data/families.jsonl,
doctor/logparse/chains.py): a client's status before "model ... does not exist" is the model id the server
does not serve, not files on disk; aiohttp's `ssl:default` and a sentence that mentions TLS are no TLS failure;
c-ares' "Could not contact DNS servers" is name resolution; a connect failure inside a server's answer is the
server's upstream; "Permission denied" names files only on a path. Each case comes with the near-miss that
must not fire. Sample lines are in the shape the source named in each comment formats them."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.logparse import chains
from tests.analysis import assert_rank_one, findings_of, written

MODEL_FIX = "Use a served model ID (GET /v1/models), or start the server with --served-model-name <name>"


@pytest.mark.parametrize(("name", "line", "model"), [
    # openai-node src/error.ts APIError.makeMessage: `${status} ${message}`, printed by a CLI as "Error: ..."
    ("openai_node", "Error: 400 The requested model 'gpt-5' does not exist.", "gpt-5"),
    ("openai_node_404", 'Error: 404 Model "meta-llama/Llama-3.1-8B" does not exist', "meta-llama/Llama-3.1-8B"),
    # huggingface_hub utils/_http.py hf_raise_for_status: the inference router's answer, then the server's message
    ("hf_router", "huggingface_hub.errors.HfHubHTTPError: 404 Client Error: Not Found for url: "
                  "https://router.huggingface.co/v1/chat/completions (Request ID: Root=1-6789) Model meta-llama/Llama-3.1-8B "
                  "does not exist", ""),
])
def test_a_clients_answer_naming_a_model_is_the_model_id(tmp_path: Path, name: str, line: str, model: str) -> None:
    assert_rank_one(tmp_path, name, [line], "access.model_not_found", line[:40], None)
    top = findings_of(tmp_path / f"{name}.log")[0]
    assert top.fixes[0].summary == MODEL_FIX
    if model:
        assert "recognised by: family: model id (a client's answer)" in top.evidence
        found = chains.FAMILIES.first(line)
        assert found is not None and found[1].group("model") == model


@pytest.mark.parametrize("line", [
    # the Hub's download URL: the model download's 404 (huggingface_hub, requests' raise_for_status)
    "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://huggingface.co/foo/bar/resolve/main/config.json",
    # no status: a loader's own words about a folder
    "Error: config file not found in /models/llama",
])
def test_a_model_download_or_a_folder_stays_model_files(tmp_path: Path, line: str) -> None:
    assert findings_of(written(tmp_path, line + "\n"))[0].code == "load.model_files"


@pytest.mark.parametrize(("line", "code", "family"), [
    # aiohttp client_exceptions.py ClientConnectorError.__str__ "Cannot connect to host {host}:{port} ssl:{ssl} [{strerror}]",
    # with c-ares' ARES_ECONNREFUSED string (aiodns resolver): name resolution, not TLS
    ("ERROR | open_webui.routers.openai:generate_chat_completion:1427 - Cannot connect to host api.example.ai:443 "
     "ssl:default [Could not contact DNS servers]", "access.dns_failed", "name resolution"),
    ("aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host api.example.ai:443 ssl:False "
     "[Timeout while contacting DNS servers]", "access.dns_failed", "name resolution"),
    # Node's tls.js: the socket closed before the handshake finished
    ("Error: Client network socket disconnected before secure TLS connection was established", "access.tls_failed", "certificate"),
    # people type it without the apostrophe
    ("i have an error: `cant connect to OLLAMA http://localhost:11434`.", "access.connect_failed", "connection refused"),
])
def test_families_read_the_cause_not_the_connectors_setting(tmp_path: Path, line: str, code: str, family: str) -> None:
    top = findings_of(written(tmp_path, line + "\n"))[0]
    assert top.code == code, top.evidence
    assert f"recognised by: family: {family}" in top.evidence


def test_a_sentence_mentioning_tls_names_no_tls_failure() -> None:
    line = ("The root cause is that liveness probes begin checking before vLLM finishes loading models, and with TLS cert "
            "rotation happening during startup, the probes never pass in time.")
    found = chains.family(line)
    assert found is None or found.kind != "client_tls", found


def test_a_connect_failure_inside_a_servers_answer_is_not_the_clients(tmp_path: Path) -> None:
    """The proxy answered (its 504 in the access log): the client reached it; the body names the proxy's upstream."""
    lines = ['{"detail":"Could not connect to backend server."}',
             '2025-09-17 09:08:42,166 [INFO] uvicorn.access - 10.0.0.5:55936 - "POST /api/generate HTTP/1.1" 504']
    assert chains.family(lines[0]) is None
    codes = [f.code for f in findings_of(written(tmp_path, "\n".join(lines) + "\n"))]
    assert codes[0] == "access.timeout", codes
    # near-miss: the client's own words for its connection stay the client's
    assert chains.family("Error: could not connect to ollama app, is it running?").kind == "client_refused"


def test_an_escaped_error_body_is_read_with_its_own_quotes(tmp_path: Path) -> None:
    # Ollama server/routes.go {"error": "model \"x\" not found, try pulling it first"} quoted as a JSON string by a client
    line = ('An error occurred during credentials validation: API request failed with status code 404: '
            '{\\"error\\":\\"model \\\\\\"llama3\\\\\\" not found, try pulling it first\\"}')
    assert chains.inner_message(line) == ('model "llama3" not found, try pulling it first', "HTTP error body")
    assert_rank_one(tmp_path, "ollama_escaped", [line], "access.model_not_found", "credentials validation", None)
    assert findings_of(tmp_path / "ollama_escaped.log")[0].fixes[0].summary == MODEL_FIX


@pytest.mark.parametrize("line", [
    "PermissionError: [Errno 13] Permission denied: '/models/llama/config.json'",
    "Error: open /root/.ollama/models/blobs/sha256-4f2a: permission denied",  # Go os.PathError
    "mkdir: cannot create directory '/root/.cache/huggingface': Permission denied",  # coreutils
])
def test_permission_denied_on_a_path_is_the_model_files(tmp_path: Path, line: str) -> None:
    top = findings_of(written(tmp_path, line + "\n"))[0]
    assert top.code == "load.model_files" and "recognised by: family: permission denied" in top.evidence


def test_an_applications_own_permission_refusal_names_no_files() -> None:
    assert chains.family("Permission denied for Write: Classifier unavailable") is None


@pytest.mark.parametrize("line", [
    # node-fetch's FetchError around OpenSSL's SELF_SIGNED_CERT_IN_CHAIN string, retyped with "certificate" misspelt
    "FetchError: request to https://llm.example.com/api/chat/completions failed, reason: self-signed certficates in certifcate path",
    "Error: self signed certificate in certificate chain",  # OpenSSL X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN (Node < 17)
])
def test_a_self_signed_certificate_is_tls(line: str) -> None:
    found = chains.family(line)
    assert found is not None and found.kind == "client_tls" and found.name == "certificate"


def test_a_connect_error_with_no_tls_words_is_no_tls_failure() -> None:
    found = chains.family("Error: connect ECONNREFUSED 127.0.0.1:11434")
    assert found is not None and found.kind == "client_refused"
