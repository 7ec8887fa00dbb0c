"""Refusals the server answered, worded as the SDK or the API words them (catalogue entries in clients_python,
providers and litellm.jsonl name each source@ref), judged end to end: the code at rank 1, the quoted line, and the
first fix's exact command. Also the AWS SDK's ClientError shape, which marks a log as a client's: a Bedrock refusal
is the channel's failure, never an engine's load failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.findings import Finding
from tests import analysis

OPENAI_KEY_FIX = "read -rs OPENAI_API_KEY && export OPENAI_API_KEY"


def findings_of(tmp_path: Path, text: str) -> list[Finding]:
    return analysis.findings_of(analysis.written(tmp_path, text))


# (case, log text, rank-1 code, a substring of its evidence, its first fix's exact command or None)
CASES = [
    # openai-python v1.50.0 src/openai/_client.py, pasted cut after its first words (the sentence goes on "either by passing ...")
    ("openai-no-key-cut", "OpenAIError: The api_key client option must be set\n", "access.key_missing",
     "api_key client option must be set", OPENAI_KEY_FIX),
    # openai-python 20f81f8c src/openai/_client.py: the wording since admin-key auth
    ("openai-no-key-2026", "openai.OpenAIError: Missing credentials. Please pass an `api_key`, `workload_identity`, `admin_api_key`, "
     "or set the `OPENAI_API_KEY` or `OPENAI_ADMIN_KEY` environment variable.\n", "access.key_missing",
     "Missing credentials", OPENAI_KEY_FIX),
    # openai-python v1.50.0 src/openai/lib/azure.py: AzureOpenAI() with neither a key nor a token
    ("azure-no-key", "openai.OpenAIError: Missing credentials. Please pass one of `api_key`, `azure_ad_token`, "
     "`azure_ad_token_provider`, or the `AZURE_OPENAI_API_KEY` or `AZURE_OPENAI_AD_TOKEN` environment variables.\n",
     "access.key_missing", "azure_ad_token", "read -rs AZURE_OPENAI_API_KEY && export AZURE_OPENAI_API_KEY"),
    # Amazon Bedrock through botocore's ClientError (botocore/exceptions.py MSG_TEMPLATE)
    ("bedrock-inference-profile", "botocore.errorfactory.ValidationException: An error occurred (ValidationException) when calling "
     "the Converse operation: Invocation of model ID amazon.nova-lite-v1:0 with on-demand throughput isn\u2019t supported. Retry your "
     "request with the ID or ARN of an inference profile that contains this model.\n", "access.model_not_found",
     "on-demand throughput", None),
    ("bedrock-model-access", "AccessDeniedException: Model access is denied due to IAM user or service role is not authorized to "
     "perform the required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable "
     "access to this model.\n", "access.model_not_found", "Model access is denied", None),
    # Google's front end refusing a field its schema lacks: the request is another API's shape
    ("gemini-unknown-field", "{\"error\": {\"code\": 400, \"message\": \"Invalid JSON payload received. Unknown name \\\"store\\\": "
     "Cannot find field.\", \"status\": \"INVALID_ARGUMENT\"}}\n", "access.protocol_mismatch", "Unknown name", None),
]


@pytest.mark.parametrize(("name", "text", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path: Path, name: str, text: str, code: str, evidence: str, command: str | None) -> None:
    found = findings_of(tmp_path, text)
    assert found and found[0].code == code, [f.code for f in found]
    assert any(evidence in line for line in found[0].evidence), found[0].evidence
    assert found[0].fixes[0].command == command


@pytest.mark.parametrize("text", [
    # Bedrock's 400 for a prompt above the model's context (aws-solutions-library-samples/accelerated-intelligent-document-
    # processing-on-aws docs/troubleshooting.md)
    "botocore.errorfactory.ValidationException: An error occurred (ValidationException) when calling the Converse operation: "
    "Input is too long for requested model.\n",
    # LiteLLM's ContextWindowExceededError (litellm/exceptions.py), whatever provider message follows it
    "litellm.exceptions.ContextWindowExceededError: litellm.ContextWindowExceededError: ContextWindowExceededError: "
    "Hosted_vllmException - Error code: 400\n",
])
def test_a_prompt_above_the_context_is_the_refused_request_not_a_load_failure(tmp_path: Path, text: str) -> None:
    found = findings_of(tmp_path, text)
    assert found[0].code == "access.unrecognized_failure", [f.code for f in found]
    assert found[0].title.startswith("the server refused the request")
    assert not any(f.code.startswith("load.") for f in found)


def test_a_bedrock_refusal_with_no_known_words_stays_on_the_client_side(tmp_path: Path) -> None:
    # botocore's ClientError names the AWS API's error: what failed is the client's call, not an engine's load
    text = ("botocore.exceptions.ClientError: An error occurred (ServiceQuotaExceededException) when calling the "
            "CreateModelInvocationJob operation: The request was denied.\n")
    found = findings_of(tmp_path, text)
    assert found[0].code == "access.unrecognized_failure", [f.code for f in found]
    assert any("ServiceQuotaExceededException" in line for line in found[0].evidence)


@pytest.mark.parametrize("text", [
    # a relay (new-api's rix_api_error) answering 429 with the Anthropic API's 400 quoted as its message (a real log: xiaozhi)
    "Error code: 429 - {'error': {'message': '{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"`temperature` "
    "and `top_p` cannot both be specified for this model. Please use only one.\"},\"request_id\":\"req_011\"}', 'type': "
    "'rix_api_error', 'param': '', 'code': None}}\n",
    # the same chain with the inner body's JSON escaped inside the outer string, behind a 500
    "Error: 500 {\"error\":{\"message\":\"{\\\"type\\\":\\\"error\\\",\\\"error\\\":{\\\"type\\\":\\\"invalid_request_error\\\",\\\"message\\\":"
    "\\\"messages.1.content: text content blocks must be non-empty\\\"}}\",\"type\":\"new_api_error\"}}\n",
])
def test_a_relays_status_around_the_upstreams_refusal_is_not_the_cause(tmp_path: Path, text: str) -> None:
    found = findings_of(tmp_path, text)
    assert found[0].code == "access.unrecognized_failure", [f.code for f in found]
    assert any("invalid_request_error" in line for line in found[0].evidence)
    assert not {"access.rate_limited", "access.server_error"} & {f.code for f in found}


def test_a_relayed_rate_limit_error_is_still_the_rate_limit(tmp_path: Path) -> None:
    # the upstream's own type is rate_limit_error: the relay's 429 and the upstream agree
    text = ("openai.RateLimitError: Error code: 429 - {'error': {'message': '{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\","
            "\"message\":\"Number of request tokens has exceeded your per-minute rate limit\"}}', 'type': 'upstream_error'}}\n")
    assert findings_of(tmp_path, text)[0].code == "access.rate_limited"


@pytest.mark.parametrize(("text", "code"), [
    # google-api-core's GoogleAPICallError, "{Class}: {code} {message}" (googleapis/python-api-core google/api_core/exceptions.py)
    ("google.api_core.exceptions.PermissionDenied: 403 Your API key was reported as leaked. Please use another API key.\n",
     "access.key_rejected"),
    ("google.api_core.exceptions.Unauthenticated: 401 Request had invalid authentication credentials. Expected OAuth 2 access "
     "token, login cookie or other valid authentication credential.\n", "access.key_rejected"),
    ("google.api_core.exceptions.NotFound: 404 models/gemini-pro is not found for API version v1beta, or is not supported for "
     "generateContent.\n", "access.model_not_found"),
])
def test_google_api_core_errors_are_the_channels(tmp_path: Path, text: str, code: str) -> None:
    found = findings_of(tmp_path, text)
    assert found[0].code == code, [f.code for f in found]
    assert any("google.api_core.exceptions" in line for line in found[0].evidence)
    assert not any(f.code.startswith("load.") for f in found)
