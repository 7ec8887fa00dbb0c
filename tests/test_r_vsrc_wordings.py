"""vLLM's and SGLang's own refusals, mined from their sources into the catalogue (vllm.jsonl, sglang.jsonl):
the OpenAI server's context-length answers in their V0 and V1 wordings, SGLang's tokenizer-manager refusals,
vLLM's per-request multimodal cap, the chunked-multimodal step budget and the VLLM_USE_V1 refusal. Each log
is the message as the engine's source formats it, in the shape the engine or a client prints it; the test
reads the finding's code and the exact value its fix computes from the numbers the message quotes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analyze_json import first_finding, fix_commands

VLLM_HEAD = "INFO 03-01 10:00:00 [api_server.py:1000] vLLM API server version 0.10.1\n"
SGLANG_HEAD = "[2025-04-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1, context_length=None)\n"




@pytest.mark.parametrize(("text", "code", "command"), [
    # V1-era serving_engine._validate_input: the prompt fits, the output asked for does not (3000 + 2048 + 1 -> 5120)
    (VLLM_HEAD + "ERROR 03-01 10:00:05 [serving_chat.py:222] Error in preprocessing prompt inputs\n"
     "ERROR 03-01 10:00:05 [serving_chat.py:222] ValueError: 'max_tokens' or 'max_completion_tokens' is too large: 2048. "
     "This model's maximum context length is 4096 tokens and your request has 3000 input tokens (2048 > 4096 - 3000).\n",
     "load.config_invalid", "--max-model-len 5120"),
    # the prompt alone is past --max-model-len (40211 + 1 -> 40960)
    (VLLM_HEAD + "ERROR 03-01 10:00:05 [serving_chat.py:222] ValueError: This model's maximum context length is 32768 tokens. "
     "However, your request has 40211 input tokens. Please reduce the length of the input messages.\n",
     "load.config_invalid", "--max-model-len 40960"),
    # SGLang's tokenizer manager: the prompt is longer than --context-length (204281 + 1 -> 204800)
    (SGLANG_HEAD + "[2025-04-01 10:00:05] Error in request: The input (204281 tokens) is longer than the model's "
     "context length (202752 tokens).\n", "load.config_invalid", "--context-length 204800"),
])
def test_an_engine_log_refusing_a_long_request_sizes_the_context(tmp_path: Path, text: str, code: str, command: str) -> None:
    finding = first_finding(tmp_path, text)
    assert finding["code"] == code
    assert command in fix_commands(finding)


@pytest.mark.parametrize(("body", "command"), [
    # V0 servers (serving_engine._validate_prompt_and_tokenize): prompt and completion both quoted (4000 + 1000 + 1 -> 5120)
    ("{'object': 'error', 'message': \"This model's maximum context length is 4096 tokens. However, you requested 5000 "
     "tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.\", "
     "'type': 'BadRequestError', 'param': None, 'code': 400}", "--max-model-len 5120"),
    # SGLang: prompt + max_new_tokens reaches the context (7897 + 64000 + 1 -> 72704)
    ("{'object': 'error', 'message': \"Requested token count exceeds the model's maximum context length of 64000 tokens. "
     "You requested a total of 71897 tokens: 7897 tokens from the input messages and 64000 tokens for the completion. "
     "Please reduce the number of tokens in the input messages or the completion to fit within the limit.\", "
     "'type': 'BadRequestError', 'param': None, 'code': 400}", "--context-length 72704"),
])
def test_a_client_relaying_the_refusal_gets_the_context_the_request_needs(tmp_path: Path, body: str, command: str) -> None:
    text = ("Traceback (most recent call last):\n  File \"/app/client.py\", line 12, in <module>\n"
            "    resp = client.chat.completions.create(model=\"qwen\", messages=messages)\n"
            f"openai.BadRequestError: Error code: 400 - {body}\n")
    finding = first_finding(tmp_path, text, "client.log")
    assert finding["code"] == "access.unrecognized_failure"  # shared/codes.md names no access code for a request too long
    assert command in fix_commands(finding)


@pytest.mark.parametrize(("line", "command"), [
    ("ValueError: At most 1 image(s) may be provided in one request. You can set `--limit-mm-per-prompt` to increase "
     "this limit if the model supports it.", "--limit-mm-per-prompt '{\"image\": 2}'"),
    ("ValueError: At most 2 images may be provided in one request.", "--limit-mm-per-prompt '{\"image\": 3}'"),
])
def test_the_per_request_multimodal_cap_names_the_flag_above_its_limit(tmp_path: Path, line: str, command: str) -> None:
    finding = first_finding(tmp_path, VLLM_HEAD + "ERROR 03-01 10:00:05 [serving_chat.py:222] " + line + "\n")
    assert finding["code"] == "load.config_invalid"
    assert fix_commands(finding) == [command]


def test_the_chunked_multimodal_budget_raises_the_step_to_one_whole_item(tmp_path: Path) -> None:
    finding = first_finding(tmp_path, VLLM_HEAD + "(EngineCore_DP0 pid=301) ERROR 03-01 10:00:03 [core.py:708] ValueError: Chunked MM "
                     "input disabled but max_tokens_per_mm_item (2496) is larger than max_num_batched_tokens (2048). "
                     "Please increase max_num_batched_tokens.\n")
    assert finding["code"] == "load.config_invalid"
    assert fix_commands(finding) == ["--max-num-batched-tokens 2496"]


def test_a_feature_v1_lacks_with_v1_forced_is_a_config_refusal(tmp_path: Path) -> None:
    finding = first_finding(tmp_path, VLLM_HEAD + "NotImplementedError: VLLM_USE_V1=1 is not supported with --speculative-model.\n")
    assert finding["code"] == "load.config_invalid"
    assert "--speculative-model" in finding["title"]
