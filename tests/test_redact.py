"""The redactor, tested with canary secrets in the shapes they take in real outputs."""

from __future__ import annotations

import pytest

from llm_doctor.redact import Redactor, mask

CANARY = "sk-canary-0123456789abcdefXYZ"


def test_mask_shows_first3_last4() -> None:
    assert mask(CANARY) == "sk-...fXYZ"
    assert mask("short") == "****"


@pytest.mark.parametrize(
    "text, gone",
    [
        (f"key={CANARY}", CANARY),
        (f"'{CANARY}\\n'", CANARY),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"),
        ('{"authorization": "Bearer tok_1234567890abcdef"}', "tok_1234567890abcdef"),
        ("x-api-key: sk-ant-api03-AAAABBBBCCCCDDDD", "sk-ant-api03-AAAABBBBCCCCDDDD"),
        ("https://alice:hunter2secret@proxy.corp:3128", "hunter2secret"),
        ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz12", "hf_abcdefghijklmnopqrstuvwxyz12"),
        ("vllm serve m --api-key token-abc123 --port 8000", "token-abc123"),
        ("INFO args: Namespace(api_key='my-private-key-42', port=8000)", "my-private-key-42"),
        ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    ],
)
def test_patterns_mask_secrets(text: str, gone: str) -> None:
    assert gone not in Redactor([CANARY]).text(text)


def test_exact_secret_in_any_form() -> None:
    r = Redactor([f"  Bearer {CANARY}\n"])
    assert CANARY not in r.text(f"got {CANARY} back")


def test_obj_redacts_nested_values_and_keys() -> None:
    out = Redactor([CANARY]).obj({"a": [CANARY, {"b": f"x {CANARY}"}], CANARY: 1, "n": 3})
    assert CANARY not in repr(out)
    assert out["n"] == 3


def test_placeholders_and_plain_text_untouched() -> None:
    r = Redactor(["EMPTY"])
    assert r.text("api key EMPTY, model Qwen/Qwen2.5-7B-Instruct at http://10.0.0.5:8000/v1") == (
        "api key EMPTY, model Qwen/Qwen2.5-7B-Instruct at http://10.0.0.5:8000/v1"
    )


KEY43 = "ck_live_9fT2mQ7xLp4RzW8vNb3HsJ6kYd1GcE5auV0"


@pytest.mark.parametrize("start, length", [(0, 32), (5, 32), (11, 8), (20, 23), (0, 8)])
def test_any_fragment_of_a_known_secret_of_8_or_more_is_masked(start: int, length: int) -> None:
    piece = KEY43[start : start + length]
    out = Redactor([KEY43]).text(f"Incorrect API key provided: {piece}... and again {piece}")
    assert out == "Incorrect API key provided: ****... and again ****"


def test_fragments_shorter_than_8_and_the_masked_form_stay() -> None:
    r = Redactor([KEY43])
    assert r.text(f"ends with {KEY43[-7:]}") == f"ends with {KEY43[-7:]}"
    assert r.text(f"key {KEY43}") == "key ck_...auV0"


@pytest.mark.parametrize(
    "text, value",
    [
        ("vllm serve m --api_key s3cr3t-value-1 --port 8000", "s3cr3t-value-1"),
        ("vllm serve m --api-key=s3cr3t-value-1 --port 8000", "s3cr3t-value-1"),
        ("--hf_token s3cr3t-value-1", "s3cr3t-value-1"),
        ("--hf-token=s3cr3t-value-1", "s3cr3t-value-1"),
        ("--token s3cr3t-value-1", "s3cr3t-value-1"),
        ("vllm serve: error: unrecognized arguments: --api_key s3cr3t-value-1", "s3cr3t-value-1"),
        ("args: ['--api_key', 's3cr3t-value-1']", "s3cr3t-value-1"),
        ('"args": ["--api-key", "s3cr3t-value-1"]', "s3cr3t-value-1"),
        ("args:\n- --api-key\n- s3cr3t-value-1", "s3cr3t-value-1"),
        ("vllm serve m \\\n  --api-key \\\n  s3cr3t-value-1 \\\n  --port 8000", "s3cr3t-value-1"),
        ("VLLM_API_KEY=s3cr3t-value-1 vllm serve m", "s3cr3t-value-1"),
        ("http://h:8000/v1?key=s3cr3t-value-1", "s3cr3t-value-1"),
        ("http://h/v1/models?x=1&api_key=s3cr3t-value-1#top", "s3cr3t-value-1"),
        ("https://h/?apikey=s3cr3t-value-1", "s3cr3t-value-1"),
        ("https://h/?token=s3cr3t-value-1&b=2", "s3cr3t-value-1"),
        ("https://h/?access_token=s3cr3t-value-1", "s3cr3t-value-1"),
        ("https://blob/x?sv=2024&sig=s3cr3t-value-1", "s3cr3t-value-1"),
        ("https://s3/x?X-Amz-Signature=s3cr3t-value-1", "s3cr3t-value-1"),
    ],
)
def test_secret_flags_and_query_parameters_in_every_spelling(text: str, value: str) -> None:
    assert value not in Redactor().text(text)


@pytest.mark.parametrize(
    "text",
    [
        "--max-num-batched-tokens 8192 --tokenizer org/tok --max-tokens 16",
        '{"usage": {"prompt_tokens": 15, "completion_tokens": 2}, "max_tokens": 16}',
        "http://h:8000/v1/models?limit=10&after=abc",
        "--skip-tokenizer-init --bos-token-id 1",
    ],
)
def test_names_that_only_contain_token_are_not_secrets(text: str) -> None:
    assert Redactor().text(text) == text


def test_a_value_under_a_secret_name_is_masked_whatever_it_looks_like() -> None:
    out = Redactor().obj({"--hf-token": "plainword1", "password": "hunter2", "max_tokens": "16", "api_key_set": True, "VLLM_API_KEY": "<set>"})
    assert out == {"--hf-token": "****", "password": "****", "max_tokens": "16", "api_key_set": True, "VLLM_API_KEY": "<set>"}


@pytest.mark.parametrize("text", ["x" * 1_000_000, "--" + "a-" * 500_000, "http://" + "a" * 1_000_000, "?" + "a" * 1_000_000,
                                  "x=" * 500_000, "key" * 300_000, ":" * 1_000_000])  # fmt: skip
def test_long_runs_cost_linear_time(text: str) -> None:
    """A hostile megabyte of one word: each pattern starts once per word, so this is about a
    second of work; the old quadratic patterns (a name or scheme tried at every letter) took hours."""
    import time

    start = time.monotonic()
    assert Redactor([KEY43]).text(text) == text
    assert time.monotonic() - start < 60


def test_prose_after_a_flag_name_is_not_its_value() -> None:
    text = "key sk-...cdef (from flag --api-key, 21 characters); see --token\n\nnext"
    assert Redactor().text(text) == text


@pytest.mark.parametrize(
    "line",
    [
        # shared/real/other-engines/sglang-0.3.x-2024-10-prefill-decode-near-full-kv.txt
        "[16:43:35 TP0] Decode batch. #running-req: 26, #token: 53692, token usage: 0.96, gen throughput (token/s): 81.25, #queue-req: 17",
        "[16:43:29 TP0] Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 291, cache hit rate: 2.76%, token usage: 0.04, "
        "#running-req: 1, #queue-req: 38",
    ],
)
def test_a_count_of_tokens_in_a_stat_line_is_not_a_secret(line: str) -> None:
    assert Redactor().text(line) == line


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("#token: hf_abcdefghijklmnopqrstuvwx", "hf_abcdefghijklmnopqrstuvwx"),  # a secret in the same shape is still masked
        ("token: abcdEFGH1234xyz", "abcdEFGH1234xyz"),
        ("--api-key 123456", "123456"),  # a key, a secret or a password made of digits is still a secret
        ("VLLM_API_KEY=8192", "8192"),
        ("password: 1234", "1234"),
        ("--hf-token 12345678901234", "12345678901234"),  # longer than any count
    ],
)
def test_secrets_shaped_like_the_count_are_still_masked(text: str, value: str) -> None:
    assert value not in Redactor().text(text)
