"""The key, model-ID and quota neighbours told apart by what the provider's body says, not by its status (round l):
the key an API echoes back (an unset value, a placeholder, another provider's key), the words a server uses when
no key or no model reached it, and an exhausted balance answered with 429 or 403. Bodies go through a real
127.0.0.1 server where a check reads a live answer, and log lines through `analyze`."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.collect import RunOptions
from llm_doctor.collect.endpoint import probe
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.facts import Facts
from llm_doctor.report import Report, build_report
from llm_doctor.settings import resolve
from tests.analysis import assert_rank_one, findings_of, written
from tests.servers.http import FakeServer, Reply, Request
from tests.servers.openai_like import VllmLike

KEY = "sk-canary-0123456789abcdefXYZ"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def diagnose(base_url: str, key: str | None = KEY, model: str = MODEL) -> Report:
    """The access layer against a live server, as `llm-doctor run --only access` judges it (without a log)."""
    settings = resolve(base_url, key, model, "auto", env={}, home=Path("/nonexistent"), cwd=Path("/nonexistent"))
    facts = Facts(settings=settings.to_facts())
    facts.endpoint = probe(settings, RunOptions(layers=("access",), timeout=2.0), Deadline(30), None)
    specs = [s for s in select(load_checks(), ["access"]) if s.id != "access.client_log"]
    return build_report(run_checks(facts, specs, Deadline(30)), facts)


def codes(report: Report) -> list[str]:
    return [f.code for f in report.findings]


# --- live answers: the probe reads the body, the check decides from its words ---------------------------------


@pytest.mark.parametrize(("status", "body", "code"), [
    # Azure OpenAI's per-minute limit links aka.ms/oai/quotaincrease: a rate limit, whatever the link is called
    (429, {"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version "
                     "2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds. "
                     "Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."}},
     "access.rate_limited"),
    # the OpenAI API's 429 for an account with no credit left
    (429, {"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
                     "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}, "access.quota_exceeded"),
    # Moonshot's 429 names the quota in its type only
    (429, {"error": {"message": "Your account org-1 <ak-1> request reached max organization quota",
                     "type": "exceeded_current_quota_error"}}, "access.quota_exceeded"),
    # xAI answers an exhausted team with 403: the account, not the key
    (403, {"code": "The caller does not have permission to execute the specified operation",
           "error": "Your team 9a8b has either used all available credits or reached its monthly spending limit."},
     "access.quota_exceeded"),
])
def test_a_live_429_or_403_is_quota_only_when_its_body_names_the_balance(status: int, body: dict, code: str) -> None:
    with FakeServer(VllmLike(key=KEY, models=[MODEL], chat_override=Reply(status, body))) as srv:
        report = diagnose(srv.url + "/v1")
    assert codes(report)[0] == code, codes(report)
    assert "access.key_rejected" not in codes(report)
    assert any(f"-> {status} " in line for line in report.findings[0].evidence), report.findings[0].evidence


def test_a_live_404_from_openrouter_with_no_endpoint_for_the_model_is_the_model() -> None:
    body = {"error": {"message": f"No endpoints found for {MODEL}.", "code": 404}}
    with FakeServer(VllmLike(key=KEY, models=[MODEL], chat_override=Reply(404, body))) as srv:
        report = diagnose(srv.url + "/v1")
    top = report.findings[0]
    assert top.code == "access.model_not_found", codes(report)
    assert f"POST {srv.url}/v1/chat/completions -> 404 No endpoints found for {MODEL}." in top.evidence
    assert "access.base_url_invalid" not in codes(report)


def test_a_live_404_from_azure_for_a_deployment_it_lacks_is_the_model() -> None:
    body = {"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist. If you created "
                      "the deployment within the last 5 minutes, please wait a moment and try again."}}
    with FakeServer(VllmLike(key=KEY, models=[MODEL], chat_override=Reply(404, body))) as srv:
        report = diagnose(srv.url + "/v1")
    assert codes(report)[0] == "access.model_not_found", codes(report)
    assert "access.base_url_invalid" not in codes(report)


def anthropic_like(answer: Reply) -> object:
    """An API that refuses every /v1 request with `answer` (as a provider does before it reads the request)."""
    def app(req: Request) -> Reply:
        return answer
    return app


def test_a_live_401_that_says_no_key_arrived_with_none_configured_is_key_missing() -> None:
    body = {"type": "error", "error": {"type": "authentication_error", "message": "x-api-key header is required"}}
    with FakeServer(anthropic_like(Reply(401, body))) as srv:  # type: ignore[arg-type]
        report = diagnose(srv.url + "/v1", key=None)
    top = report.findings[0]
    assert top.code == "access.key_missing", codes(report)
    assert any("401 x-api-key header is required" in line for line in top.evidence), top.evidence


# --- log lines: the key the provider echoes back ----------------------------------------------------------------

OPENAI_401 = ("openai.AuthenticationError: Error code: 401 - {{'error': {{'message': 'Incorrect API key provided: {key}. You can "
              "find your API key at https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error', 'param': None, "
              "'code': 'invalid_api_key'}}}}")


@pytest.mark.parametrize(("echo", "code"), [
    ("undefined", "access.key_missing"),  # JavaScript's unset variable, stringified by the client
    ("None", "access.key_missing"),  # Python's
    ("your-api-key", "access.key_malformed"),  # a placeholder, echoed whole because it is short
    ("ADD_YOUR*****HERE", "access.key_malformed"),  # a placeholder, masked
    ("${OPENAI_API_KEY}", "access.key_malformed"),  # a template variable nobody expanded
    ("sk-proj-********************abcd", "access.key_rejected"),  # an OpenAI key the API does not know
    ("f7124a7c************************f81d", "access.key_rejected"),  # another provider's key, masked
])
def test_the_key_openai_echoes_decides_which_key_failure(tmp_path: Path, echo: str, code: str) -> None:
    assert_rank_one(tmp_path, "echo", [OPENAI_401.format(key=echo)], code, "Incorrect API key provided", None)


@pytest.mark.parametrize(("line", "code"), [
    # DeepSeek echoes the key's last four characters: a brace is in no key (an unresolved {...} placeholder)
    ("Error code: 401 - {'error': {'message': 'Authentication Fails, Your api key: ****eek} is invalid', "
     "'type': 'authentication_error', 'param': None, 'code': 'invalid_request_error'}}", "access.key_malformed"),
    ("Error code: 401 - {'error': {'message': 'Authentication Fails, Your api key: ****a15b is invalid', "
     "'type': 'authentication_error', 'param': None, 'code': 'invalid_request_error'}}", "access.key_rejected"),
    # the LiteLLM proxy states the shape it wants itself
    ('{"error":{"message":"Authentication Error, LiteLLM Virtual Key expected. Received=anthropic-key-123, expected to start '
     "with 'sk-'.\",\"type\":\"auth_error\",\"param\":\"None\",\"code\":\"401\"}}", "access.key_malformed"),
    # LiteLLM's proxy without `Bearer ` before the key, and with nothing but the scheme (an empty variable after it)
    ('{"error":{"message":"Authentication Error, Malformed API Key passed in. Ensure Key has `Bearer ` prefix. Passed in: '
     'my_token","type":"auth_error","param":"None","code":"401"}}', "access.key_malformed"),
    ("Authentication Error, Malformed API Key passed in. Ensure Key has Bearer prefix. Passed in: Bearer", "access.key_missing"),
    # a quoted message with its value cut off echoes nothing: the status decides
    ("org.springframework.ai.retry.NonTransientAiException: 401 - {\"error\":{\"message\":\"Incorrect API key provided: sk-x\"}}",
     "access.key_rejected"),
])
def test_a_provider_echoing_part_of_the_key(tmp_path: Path, line: str, code: str) -> None:
    assert findings_of(written(tmp_path, line + "\n"))[0].code == code


# --- log lines: wordings from the providers' and clients' sources -----------------------------------------------


@pytest.mark.parametrize(("line", "code", "evidence"), [
    # Google's front end without a key (403), and with one it refuses (400 API_KEY_INVALID, "not found" included)
    ('{"error": {"code": 403, "message": "Method doesn\'t allow unregistered callers (callers without established identity). '
     'Please use API Key or other form of API consumer identity to call this API.", "status": "PERMISSION_DENIED"}}',
     "access.key_missing", "unregistered callers"),
    ("google.api_core.exceptions.InvalidArgument: 400 API key not valid. Please pass a valid API key. [reason: \"API_KEY_INVALID\"",
     "access.key_rejected", "API key not valid"),
    ("400 API Key not found. Please pass a valid API key. Reason: API_KEY_INVALID", "access.key_rejected", "API Key not found"),
    # google-genai's Client() without a key; the OpenAI API without a bearer; LiteLLM without the provider's key
    ("ValueError: Missing key inputs argument! To use the Google AI API, provide (`api_key`) arguments. To use the Google "
     "Cloud API, provide (`vertexai`, `project` & `location`) arguments.", "access.key_missing", "Missing key inputs argument"),
    ("openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Missing bearer or basic authentication in header', "
     "'type': 'invalid_request_error', 'param': None, 'code': None}}", "access.key_missing", "Missing bearer"),
    ("litellm.AuthenticationError: Missing Anthropic API Key - A call is being made to anthropic but no key is set either in "
     "the environment variables or via params.", "access.key_missing", "Missing Anthropic API Key"),
    # okhttp refusing a header value with a newline in it (4.x hides the value, 3.x prints it)
    ("java.lang.IllegalArgumentException: Unexpected char 0x0a at 80 in Authorization value", "access.key_malformed",
     "Unexpected char 0x0a"),
    # fetch (undici), HttpURLConnection and aiohttp refusing a header value with a newline in it (undici quotes the value, so
    # its message spans two lines)
    ('TypeError: Headers.append: "Bearer sk-abc123\n" is an invalid header value.', "access.key_malformed", "invalid header value"),
    ("java.lang.IllegalArgumentException: Illegal character(s) in message header value: Bearer sk-abc123", "access.key_malformed",
     "Illegal character(s)"),
    ("ValueError: Newline or carriage return character detected in HTTP status message or header. This is a potential security "
     "issue.", "access.key_malformed", "Newline or carriage return"),
    # one-api: no token, an unknown one
    ('{"error":{"message":"未提供令牌 (request id: 2024)","type":"one_api_error"}}', "access.key_missing", "未提供令牌"),
    ('{"error":{"message":"无效的令牌 (request id: 2024)","type":"one_api_error"}}', "access.key_rejected", "无效的令牌"),
])
def test_key_wordings_from_source(tmp_path: Path, line: str, code: str, evidence: str) -> None:
    assert_rank_one(tmp_path, "key", [line], code, evidence, None)


@pytest.mark.parametrize(("line", "code", "evidence"), [
    # the model field absent or empty: Volcengine Ark, vLLM formatting an empty name, LiteLLM's model=None, ollama-python
    ('Error in OpenAI API call: {"status":400,"error":{"code":"MissingParameter","message":"The request failed because it is '
     'missing `model` parameter. Request id: 0217","param":"model","type":"BadRequest"}}', "access.model_id_missing", "MissingParameter"),
    ("openai.NotFoundError: Error code: 404 - {'object': 'error', 'message': 'The model `` does not exist.', 'type': "
     "'NotFoundError', 'param': None, 'code': 404}", "access.model_id_missing", "does not exist"),
    ('{"error":{"message":"Invalid model name passed in model=None. Call `/v1/models` to view available models for your key.",'
     '"type":"invalid_request_error","param":"None","code":"400"}}', "access.model_id_missing", "model=None"),
    ("ollama._types.ResponseError: model is required (status code: 400)", "access.model_id_missing", "model is required"),
    # a named model the provider does not serve: OpenRouter's routing, Groq's retired models
    ("openai.NotFoundError: Error code: 404 - {'error': {'message': 'No endpoints found that support tool use. To learn more "
     "about provider routing, visit: https://openrouter.ai/docs/provider-routing', 'code': 404}}", "access.model_not_found",
     "No endpoints found"),
    ("openai.BadRequestError: Error code: 400 - {'error': {'message': 'The model `mixtral-8x7b-32768` has been decommissioned and "
     "is no longer supported.', 'type': 'invalid_request_error', 'code': 'model_decommissioned'}}", "access.model_not_found",
     "decommissioned"),
])
def test_model_wordings_from_source(tmp_path: Path, line: str, code: str, evidence: str) -> None:
    assert_rank_one(tmp_path, "model", [line], code, evidence, None)


@pytest.mark.parametrize(("line", "code", "evidence"), [
    # Together, the Hugging Face router and SiliconFlow for a model they do not serve; an empty name is no model at all
    ("openai.BadRequestError: Error code: 400 - {'error': {'message': 'Unable to access model meta-llama/Llama-3-70b. Please visit "
     "https://api.together.ai/models to view the list of supported models.', 'type': 'invalid_request_error', 'param': None, "
     "'code': 'model_not_available'}}", "access.model_not_found", "Unable to access model"),
    ("Error: 400 Unable to access model . Please visit https://api.together.ai/models to view the list of supported models.",
     "access.model_id_missing", "Unable to access model"),
    ("Bad request: {'message': \"The requested model 'HuggingFaceH4/zephyr-7b-beta' is not supported by any provider you have "
     "enabled.\", 'type': 'invalid_request_error', 'param': 'model', 'code': 'model_not_supported'}", "access.model_not_found",
     "not supported by any provider"),
    ("openai.BadRequestError: Error code: 400 - {'code': 20012, 'message': 'Model does not exist. Please check it carefully.', "
     "'data': None}", "access.model_not_found", "Please check it carefully"),
    ("botocore.errorfactory.ValidationException: An error occurred (ValidationException) when calling the InvokeModel operation: "
     "The provided model identifier is invalid.", "access.model_not_found", "model identifier is invalid"),
    # the OpenAI API's 403 for a project that may not use the model: the model, not the key
    ("openai.PermissionDeniedError: Error code: 403 - {'error': {'message': 'Project `proj_abc` does not have access to model "
     "`gpt-4o`', 'type': 'invalid_request_error', 'param': None, 'code': 'model_not_found'}}", "access.model_not_found",
     "does not have access to model"),
    # Groq's schema check and a pydantic request model, for a body without a model
    ("Error: 400 {\"error\":{\"message\":\"'model' : property 'model' is missing\",\"type\":\"invalid_request_error\"}}",
     "access.model_id_missing", "property 'model' is missing"),
    ("openai.BadRequestError: Error code: 400 - {'error': {'message': 'model: String should have at least 1 character', "
     "'type': 'invalid_request_error'}}", "access.model_id_missing", "at least 1 character"),
    # aider names the variables it did not find
    ("Model gpt-4o: Missing these environment variables:", "access.key_missing", "Missing these environment variables"),
    # huggingface_hub's InferenceClient: no token, no model, a model no provider serves
    ("ValueError: You must provide an api_key to work with together API or log in with `huggingface-cli login`.",
     "access.key_missing", "You must provide an api_key"),
    ("ValueError: Please provide an HF model ID supported by together.", "access.model_id_missing", "Please provide an HF model ID"),
    ("ValueError: Model meta-llama/Llama-3.3-70B-Instruct is not supported by provider novita.", "access.model_not_found",
     "not supported by provider"),
    # Spring AI at start-up without its key; .NET refusing an Authorization value with a space in it
    ("Caused by: java.lang.IllegalArgumentException: OpenAI API key must be set. Use the connection property: "
     "spring.ai.openai.api-key or spring.ai.openai.chat.api-key property.", "access.key_missing", "OpenAI API key must be set"),
    ("System.FormatException: The format of value 'Bearer sk-abc123 def' is invalid.", "access.key_malformed", "The format of value"),
])
def test_provider_wordings_of_the_model_and_key(tmp_path: Path, line: str, code: str, evidence: str) -> None:
    assert_rank_one(tmp_path, "model", [line], code, evidence, None)


@pytest.mark.parametrize("line", [
    # a wrapper's RateLimitError around the OpenAI API's quota answer
    "litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your current quota, please check your plan and billing details.",
    # Zhipu's 1113 (balance too low) answered with 429
    "openai.RateLimitError: Error code: 429 - {'error': {'code': '1113', 'message': '余额不足或无可用资源包,请充值。'}}",
    "cohere.errors.too_many_requests_error.TooManyRequestsError: status_code: 429, body: {'message': \"You are using a Trial key, "
    "which is limited to 1000 API calls / month.\"}",
    # Google's QuotaFailure detail alone, without the sentence before it
    "google.genai.errors.ClientError: 429 RESOURCE_EXHAUSTED. Quota exceeded for metric: generativelanguage.googleapis.com/"
    "generate_content_free_tier_requests, limit: 20, model: gemini-2.5-flash. Please retry in 48s.",
    # DashScope's Arrearage and xAI's exhausted team, whatever status carries them
    "openai.BadRequestError: Error code: 400 - {'error': {'message': 'Access denied, please make sure your account is in good "
    "standing.', 'type': 'Arrearage', 'code': 'Arrearage'}}",
    "Error: Your team 9a8b has either used all available credits or reached its monthly spending limit.",
])
def test_a_429_whose_body_names_the_balance_is_quota(tmp_path: Path, line: str) -> None:
    assert findings_of(written(tmp_path, line + "\n"))[0].code == "access.quota_exceeded"


@pytest.mark.parametrize("line", [
    "openai.RateLimitError: Error code: 429 - {'error': {'message': 'Rate limit reached for gpt-4o in organization org-abc "
    "on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.', 'type': 'tokens', 'code': 'rate_limit_exceeded'}}",
    # Cohere's trial key per minute is a rate (per month it is the quota above)
    "cohere.errors.too_many_requests_error.TooManyRequestsError: status_code: 429, body: {'message': 'You are using a Trial key, "
    "which is limited to 5 API calls / minute.'}",
    # Google's quota per minute (Vertex AI's QuotaFailure names its window): a rate
    "openai.RateLimitError: Error code: 429 - [{'error': {'code': 429, 'message': \"Quota exceeded for quota metric 'Generate "
    "Content API requests per minute' and limit 'GenerateContent request limit per minute for a region' of service "
    "'generativelanguage.googleapis.com'\", 'status': 'RESOURCE_EXHAUSTED'}}]",
    # OpenRouter's free-model allowance per day, which credits would raise: still a limit on the rate
    "openai.RateLimitError: Error code: 429 - {'error': {'message': 'Rate limit exceeded: free-models-per-day. Add 10 credits to "
    "unlock 1000 free model requests per day', 'code': 429}}",
])
def test_a_per_minute_or_per_day_429_stays_rate_limited(tmp_path: Path, line: str) -> None:
    assert findings_of(written(tmp_path, line + "\n"))[0].code == "access.rate_limited"


@pytest.mark.parametrize("line", [
    # a model-not-found message formatted with an empty name: Ollama's, LiteLLM's (the name empty, and None)
    'Error: 404 {"error":"model \\"\\" not found, try pulling it first"}',
    "litellm.BadRequestError: LLM Provider NOT provided. Pass in the LLM provider you are trying to call. You passed model=",
    "litellm.BadRequestError: LLM Provider NOT provided. Pass in the LLM provider you are trying to call. You passed model=None",
    # the OpenAI API and vLLM formatting a stringified absence
    "openai.NotFoundError: Error code: 404 - {'error': {'message': 'The model `None` does not exist or you do not have access "
    "to it.', 'type': 'invalid_request_error', 'param': None, 'code': 'model_not_found'}}",
])
def test_a_model_not_found_naming_no_model_is_model_id_missing(tmp_path: Path, line: str) -> None:
    assert findings_of(written(tmp_path, line + "\n"))[0].code == "access.model_id_missing"


def test_a_401_beside_a_line_saying_the_key_was_empty_is_key_missing(tmp_path: Path) -> None:
    text = ("openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Invalid API Key', 'code': 'invalid_api_key'}}\n"
            "The OPENAI_API_KEY environment variable was empty in the container.\n")
    codes_ = [f.code for f in findings_of(written(tmp_path, text))]
    assert codes_[0] == "access.key_missing", codes_
