"""The redactor, tested with canary secrets in the shapes they take in real outputs."""

from __future__ import annotations

import pytest

from doctor.redact import Redactor, mask

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
