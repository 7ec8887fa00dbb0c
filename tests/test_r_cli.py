"""Client-side failures r-cli covers, judged end to end (rank-1 code and its evidence): a model-not-found naming a
stand-in for an unset model, a key stand-in or a header without its key, a 502 through the environment's proxy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import analysis

# (name, log text, rank-1 code, a piece of its evidence)
CASES = [
    # vLLM serving_engine.py "The model `{model}` does not exist." for a client's `model or "default"` fallback
    ("model-default", "Error code: 404 - {'error': {'message': 'The model `default` does not exist.', 'type': "
     "'NotFoundError', 'code': 404}}\n", "access.model_id_missing", "The model `default` does not exist"),
    # Ollama server/routes.go `model '%s' not found` for Continue's unresolved "AUTODETECT"
    ("model-autodetect", "Error: model 'AUTODETECT' not found\n", "access.model_id_missing", "model 'AUTODETECT' not found"),
    # a real name stays the model's
    ("model-real", "Error: model 'llama3:8b' not found\n", "access.model_not_found", "model 'llama3:8b' not found"),
    # LiteLLM proxy/auth/user_api_key_auth.py with Cline's stand-in key (`apiKey: "noop"`)
    ("key-noop", "401 Authentication Error, LiteLLM Virtual Key expected. Received=noop, expected to start with 'sk-'.\n",
     "access.key_missing", "Received=noop"),
    ("key-template", "401 Authentication Error, LiteLLM Virtual Key expected. Received=your_api_key_here, expected to start "
     "with 'sk-'.\n", "access.key_malformed", "Received=your_api_key_here"),
    # the DeepSeek API's 401 to a header without `Bearer <key>`
    ("deepseek-no-bearer", "Error: 401 Authentication Fails (auth header format should be Bearer sk-...)\n",
     "access.key_missing", "auth header format should be Bearer"),
    # a 502 to a request for a server on the same host: the env proxy answered
    ("loopback-502", "Sending request to http://localhost:8000/v1/chat/completions\nError: 502\n", "access.proxy_failed", "502"),
    ("proxy-vars-502", "export https_proxy=\nError code: 502\n", "access.proxy_failed", "Error code: 502"),
    # a gateway named in front: its 502 is the upstream's
    ("nginx-502", "nginx in front of http://localhost:8000/v1\nError code: 502\n", "access.server_error", "Error code: 502"),
]


@pytest.mark.parametrize(("name", "text", "code", "evidence"), CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path: Path, name: str, text: str, code: str, evidence: str) -> None:
    found = analysis.findings_of(analysis.written(tmp_path, text))
    assert found and found[0].code == code, [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence
