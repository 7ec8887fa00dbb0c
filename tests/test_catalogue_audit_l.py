"""Catalogue entries whose kind gave another code than shared/codes.md gives the failure their message states
(the audit of every entry against codes.md and the engine's or client's source): each entry's own sample, run
through `llm-doctor analyze`, gives the corrected code at rank 1 and quotes the line. The samples are the
entries' `sample` fields; the comment above each case names the entry and why its code is the one codes.md gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.analysis import assert_rank_one

CATALOGUE = Path(__file__).resolve().parents[1] / "doctor" / "data" / "catalogue"

# (catalogue file, line, kind the line must now have, the sample, rank-1 code, a substring of the evidence)
CASES = [
    # ollama/ollama@v0.5.7:server/sched.go ErrMaxQueue; server/routes.go handleScheduleError answers it with
    # http.StatusServiceUnavailable: a 503 of an overloaded server is access.server_error, not a 429 rate limit
    ("ollama.jsonl", 21, "client_server_error",
     '{"error":"server busy, please try again.  maximum pending requests exceeded"}',
     "access.server_error", "maximum pending requests exceeded"),
    # openai/openai-python@v0.28.1:openai/api_requestor.py raises ServiceUnavailableError with these words when
    # rcode == 503: the server or its gateway answered 5xx, not a 200 with a body of the wrong shape
    ("clients_python.jsonl", 7, "client_server_error",
     "openai.error.ServiceUnavailableError: The server is overloaded or not ready yet.",
     "access.server_error", "overloaded or not ready yet"),
    # curl's CURLE_GOT_NOTHING (52): the connection closed before any answer, as httpx's 'Server disconnected
    # without sending a response' and node's 'socket hang up' (both access.connect_failed); no body was received
    ("clients_other.jsonl", 14, "client_refused", "curl: (52) Empty reply from server",
     "access.connect_failed", "Empty reply from server"),
    # InternLM/lmdeploy@v0.8.0:lmdeploy/turbomind/turbomind.py _from_workspace asserts the TP a model was converted
    # for against --tp: a TP size the model refuses is load.tp_invalid (as TensorRT-LLM's 'tensor parallelism mismatch')
    ("lmdeploy.jsonl", 56, "tp_gpus", "AssertionError: tp size mismatch (2 vs 4)", "load.tp_invalid", "tp size mismatch (2 vs 4)"),
    # BerriAI/litellm proxy/auth/user_api_key_auth.py: the key does not start with 'sk-', the shape of a LiteLLM
    # virtual key: codes.md's access.key_malformed ('the wrong shape for the provider'), not a key the server refused
    ("litellm.jsonl", 11, "client_key_malformed",
     '{"success": false, "error": "Authentication Error, LiteLLM Virtual Key expected. Received=your_api_key_here, '
     'expected to start with \'sk-\'.", "statusCode": 401}',
     "access.key_malformed", "LiteLLM Virtual Key expected"),
    # huggingface/text-generation-inference@v2.0.4 / v2.4.1:server/text_generation_server/models/__init__.py refuse a
    # checkpoint in a layout TGI dropped (Phi's remote-code 'phi-msft', the pre-HF 'ssm'): the files' format, which
    # codes.md's load.model_files covers, not an engine too old for the model (load.engine_outdated)
    ("tgi.jsonl", 75, "model_missing", "ValueError: Legacy phi-msft is not supported with Flash Attention",
     "load.model_files", "Legacy phi-msft"),
    ("tgi.jsonl", 76, "model_missing",
     "RuntimeError: `ssm` models have been deprecated in favor of `mamba` models, which follow standard HF formats. Check out "
     "a list here: https://huggingface.co/models?search=mamba%20-hf",
     "load.model_files", "deprecated in favor of `mamba` models"),
    # huggingface/transformers@v4.40.0:src/transformers/models/auto/auto_factory.py: the config class is one transformers
    # knows, the auto class has no model for it (a T5, a vision-language model asked for as a causal LM): the model is
    # not an architecture this loader serves (load.model_files), not a transformers release too old for it
    ("transformers.jsonl", 13, "model_missing",
     "ValueError: Unrecognized configuration class <class 'transformers.models.t5.configuration_t5.T5Config'> for this kind "
     "of AutoModel: AutoModelForCausalLM.",
     "load.model_files", "Unrecognized configuration class"),
]


@pytest.mark.parametrize(("group", "line", "kind", "sample", "code", "evidence"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_audited_entry_gives_its_code(tmp_path: Path, group: str, line: int, kind: str, sample: str, code: str, evidence: str) -> None:
    entry = json.loads((CATALOGUE / group).read_text().splitlines()[line - 1])
    assert (entry["kind"], entry["sample"]) == (kind, sample)
    assert_rank_one(tmp_path, f"{group}-{line}", [sample], code, evidence, None)
