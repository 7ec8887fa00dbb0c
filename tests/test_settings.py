"""Where settings come from (flags > env > client config files), the key's traits, and masking."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_doctor.settings import clean_key, key_traits, resolve

KEY = "sk-canary-0123456789abcdefXYZ"


def claude_settings(folder: Path, env: dict[str, str]) -> None:
    (folder / ".claude").mkdir(parents=True, exist_ok=True)
    (folder / ".claude" / "settings.json").write_text(json.dumps({"env": env, "permissions": {"allow": []}}))


def test_flags_beat_env_beat_files(tmp_path: Path) -> None:
    claude_settings(tmp_path, {"ANTHROPIC_BASE_URL": "http://file:1", "ANTHROPIC_AUTH_TOKEN": "file-key-123456789", "ANTHROPIC_MODEL": "m-file"})
    env = {"OPENAI_BASE_URL": "http://env:2/v1", "OPENAI_API_KEY": KEY}
    s = resolve("http://flag:3/v1", None, None, env=env, home=tmp_path, cwd=tmp_path / "nowhere")
    assert (s.base_url.value, s.base_url.source) == ("http://flag:3/v1", "flag --base-url")
    assert (s.api_key.value, s.api_key.source) == (KEY, "env OPENAI_API_KEY")
    assert (s.model.value, s.model.source) == ("m-file", "file ~/.claude/settings.json env.ANTHROPIC_MODEL")
    assert s.files_read == ["~/.claude/settings.json"]


def test_env_order_within_a_setting() -> None:
    env = {"OPENAI_API_BASE": "http://b/v1", "ANTHROPIC_BASE_URL": "http://c", "OPENAI_BASE_URL": "http://a/v1"}
    assert resolve(env=env, home=Path("/nonexistent"), cwd=Path("/nonexistent")).base_url.source == "env OPENAI_BASE_URL"
    del env["OPENAI_BASE_URL"]
    assert resolve(env=env, home=Path("/nonexistent"), cwd=Path("/nonexistent")).base_url.source == "env OPENAI_API_BASE"


def test_claude_code_settings_make_the_protocol_anthropic(tmp_path: Path) -> None:
    claude_settings(tmp_path, {"ANTHROPIC_BASE_URL": "https://gw.example.com/anthropic", "ANTHROPIC_AUTH_TOKEN": KEY})
    s = resolve(env={}, home=tmp_path, cwd=tmp_path / "nowhere")
    assert s.base_url.source == "file ~/.claude/settings.json env.ANTHROPIC_BASE_URL"
    assert s.api_key.source == "file ~/.claude/settings.json env.ANTHROPIC_AUTH_TOKEN"
    assert (s.protocol.value, s.protocol.source) == ("anthropic", "auto")
    assert resolve(env={}, home=tmp_path, cwd=tmp_path, protocol="openai").protocol.value == "openai"


def test_project_local_settings_beat_user_settings(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    claude_settings(home, {"ANTHROPIC_BASE_URL": "http://user", "ANTHROPIC_MODEL": "user-model"})
    claude_settings(project, {"ANTHROPIC_BASE_URL": "http://project"})
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": "http://local"}}))
    s = resolve(env={}, home=home, cwd=project)
    assert (s.base_url.value, s.base_url.source) == ("http://local", "file .claude/settings.local.json env.ANTHROPIC_BASE_URL")
    assert s.model.value == "user-model"
    assert s.files_read == [".claude/settings.local.json", ".claude/settings.json", "~/.claude/settings.json"]


def test_broken_config_file_is_ignored_and_named(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_bytes(b"\xff\xfe{not json")
    s = resolve(env={}, home=tmp_path, cwd=tmp_path / "nowhere")
    assert s.base_url.value is None
    assert s.files_read == ["~/.claude/settings.json (not valid JSON: UnicodeDecodeError; ignored)"]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"[1, 2]", "not a JSON object but a list"),
        (b'{"env": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "not valid JSON: RecursionError"),
    ],
)
def test_settings_json_of_the_wrong_shape_is_named_not_a_traceback(tmp_path: Path, content: bytes, said: str) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_bytes(content)
    s = resolve(env={}, home=tmp_path, cwd=tmp_path / "nowhere")
    assert s.files_read == [f"~/.claude/settings.json ({said}; ignored)"]


def test_codex_config_of_the_wrong_shape_is_named_not_a_traceback(tmp_path: Path) -> None:
    pytest.importorskip("tomllib")
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text('model_provider = "local"\nmodel_providers = [1, 2]\n')
    assert resolve(env={}, home=tmp_path, cwd=tmp_path).files_read == ["~/.codex/config.toml"]
    (tmp_path / ".codex" / "config.toml").write_text('model = "x\n')
    (read,) = resolve(env={}, home=tmp_path, cwd=tmp_path).files_read
    assert read.startswith("~/.codex/config.toml (not valid TOML: ") and read.endswith("; ignored)")


def test_codex_config_with_env_key(tmp_path: Path) -> None:
    pytest.importorskip("tomllib")
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(
        'model = "qwen3-coder"\nmodel_provider = "local"\n\n[model_providers.local]\nname = "vLLM"\n'
        'base_url = "http://10.0.0.5:8000/v1"\nenv_key = "LOCAL_VLLM_KEY"\nwire_api = "responses"\n'
    )
    s = resolve(env={"LOCAL_VLLM_KEY": KEY}, home=tmp_path, cwd=tmp_path / "nowhere")
    assert (s.base_url.value, s.base_url.source) == ("http://10.0.0.5:8000/v1", "file ~/.codex/config.toml model_providers.local.base_url")
    assert s.api_key.value == KEY and s.api_key.source == "env LOCAL_VLLM_KEY (env_key of ~/.codex/config.toml model_providers.local)"
    assert s.model.value == "qwen3-coder" and s.protocol.value == "openai"


@pytest.mark.parametrize(
    "raw, trait",
    [
        (KEY + "\n", "newline"),
        (" " + KEY, "leading_or_trailing_whitespace"),
        (f'"{KEY}"', "quoted"),
        (f"Bearer {KEY}", "bearer_prefix"),
        ("sk-abc def-0123456789", "inner_whitespace"),
        ("EMPTY", "placeholder"),
        ("<TOKEN>", "placeholder"),
    ],
)
def test_key_traits(raw: str, trait: str) -> None:
    traits = key_traits(raw)
    assert getattr(traits, trait) is True
    others = {"newline", "leading_or_trailing_whitespace", "quoted", "bearer_prefix", "inner_whitespace", "placeholder"} - {trait}
    if trait == "newline":
        others.discard("leading_or_trailing_whitespace")
    assert not any(getattr(traits, o) for o in others), traits


@pytest.mark.parametrize(
    "key, shape",
    [("sk-ant-api03-abcdef", "anthropic"), ("sk-proj-abcdef", "openai"), ("sk-abcdef", "openai"), ("hf_abcdef", "huggingface"),
     ("AIzaSyabcdef", "google"), ("token-abc123", "")],
)  # fmt: skip
def test_provider_shape(key: str, shape: str) -> None:
    assert key_traits(key).provider_shape == shape


def test_clean_key() -> None:
    assert clean_key(f' "Bearer {KEY}"\n') == KEY


def test_facts_hold_the_key_only_masked() -> None:
    env = {"OPENAI_API_KEY": KEY, "HTTPS_PROXY": "http://alice:hunter2secret@proxy.corp:3128"}
    facts = resolve("http://h/v1", env=env, home=Path("/nonexistent"), cwd=Path("/nonexistent")).to_facts()
    text = json.dumps(__import__("llm_doctor.facts", fromlist=["to_dict"]).to_dict(facts))
    assert KEY not in text and "hunter2secret" not in text
    assert facts.api_key.value == "sk-...fXYZ"
    assert facts.proxy_env == {"HTTPS_PROXY": "http://alice:****@proxy.corp:3128"}
    assert facts.key_traits is not None and facts.key_traits.length == len(KEY)


def test_cli_reports_where_each_value_came_from(tmp_path: Path) -> None:
    claude_settings(tmp_path, {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_AUTH_TOKEN": KEY, "ANTHROPIC_MODEL": "claude-x"})
    out = subprocess.run(
        [sys.executable, "-m", "llm_doctor", "run", "--only", "access", "--format", "json", "--timeout", "1"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
    )  # fmt: skip
    assert KEY not in out.stdout + out.stderr
    report = json.loads(out.stdout)
    s = report["facts"]["settings"]
    assert s["base_url"]["source"] == "file ~/.claude/settings.json env.ANTHROPIC_BASE_URL"
    assert s["api_key"] == {"value": "sk-...fXYZ", "source": "file ~/.claude/settings.json env.ANTHROPIC_AUTH_TOKEN"}
    assert report["facts"]["endpoint"]["protocol"] == "anthropic"
    assert report["findings"][0]["code"] == "access.connect_failed"
