"""Bad input to every parser: a finding, a note or a usage error naming the input, never a
traceback (exit 3 is kept for real bugs). Property-based (hypothesis) over each parser, seeded
with the real fixtures cut, spliced and garbled the way copies in tickets are."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_doctor import engine_args, models
from llm_doctor.collect.files import BadBundle, read_bundle
from llm_doctor.facts import Facts
from llm_doctor.logparse import metrics_text, nvidia_smi, topo
from llm_doctor.settings import resolve

FIX = Path(__file__).resolve().parent.parent / "fixtures"
# derandomize: the same examples on every run, so CI is never red by the luck of the draw
FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def corpus(folder: str) -> list[str]:
    return [p.read_text(errors="replace") for p in sorted((FIX / folder).glob("*.txt")) if not p.name.endswith(".source.txt")]


NOISE = st.sampled_from(["|", "  ", "\x00", "GPU", "N/A", "-1", "99999999999999999999999", "nan", "inf", "1e309", "%",
                         "MiB", "\n", ":", "0x", "le=", "{", "}", '"', "\ufffd", "\r\n"])


@st.composite
def damaged(draw: st.DrawFn, texts: list[str]) -> str:
    """A real capture, then a few of: cut at any point, a line lost, noise spliced in, a slice removed."""
    text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.integers(0, 3))
        at = draw(st.integers(0, len(text)))
        if op == 0:
            text = text[:at]
        elif op == 1:
            lines = text.splitlines()
            if lines:
                del lines[draw(st.integers(0, len(lines) - 1))]
            text = "\n".join(lines)
        elif op == 2:
            text = text[:at] + draw(NOISE) + text[at:]
        else:
            text = text[:at] + text[min(len(text), at + draw(st.integers(0, 80))):]
    return text


SMI, TOPO, METRICS = corpus("smi"), corpus("topo"), corpus("metrics")
LOGS = [p.read_text(errors="replace") for p in sorted((FIX / "engine_args").glob("*.log"))]
COMMANDS = [
    "vllm serve m --tensor-parallel-size 4 --max-model-len 32k --gpu-memory-utilization 0.9 --kv-cache-dtype fp8",
    "python -m sglang.launch_server --model-path x --tp 2 --context-length 8192 --mem-fraction-static 0.85",
    "text-generation-launcher --model-id x --num-shard 2 --max-total-tokens 8192",
    "llama-server -m x.gguf -c 4096 -ngl 99 --parallel 4",
]


@FUZZ
@given(damaged(SMI))
def test_nvidia_smi_text_parsers(text: str) -> None:
    lines = text.splitlines()
    table = nvidia_smi.parse_table(lines)
    assert all(isinstance(g, str) for g in nvidia_smi.table_gaps(lines, table))
    query = nvidia_smi.parse_query(lines)
    assert all(isinstance(g, str) for g in nvidia_smi.attached_gaps(text, query))
    nvidia_smi.parse_nvlink_status(lines)


@FUZZ
@given(st.text(max_size=400))
def test_nvidia_smi_xml_is_parsed_or_a_parse_error(text: str) -> None:
    try:
        nvidia_smi.parse_xml("<nvidia_smi_log><gpu id='00000000:18:00.0'>" + text)
    except ET.ParseError:
        pass  # the loader turns it into a note naming the file


@FUZZ
@given(damaged(TOPO))
def test_topo(text: str) -> None:
    matrix, p2p, nics = topo.parse(text)
    assert all(isinstance(row, list) for row in matrix + p2p)


@FUZZ
@given(damaged(METRICS))
def test_metrics_text(text: str) -> None:
    metrics_text.summarise(text)


@FUZZ
@given(st.one_of(st.sampled_from(COMMANDS).map(str.split), st.lists(st.text(max_size=20), max_size=12)),
       st.lists(st.sampled_from(["--tensor-parallel-size", "--tp", "-c", "--max-model-len", "0", "-5", "abc", "=", "--",
                                 "1.5", "'", "`4`", "--no-enable-prefix-caching", "32K"]), max_size=8))
def test_launch_commands(argv: list[str], extra: list[str]) -> None:
    cfg = engine_args.parse_command(argv + extra)
    assert all(isinstance(p, str) for p in engine_args.invalid_values(cfg))


@settings(max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged(LOGS))
def test_engine_start_up_logs(text: str) -> None:
    engine_args.parse_log_args(text)


SCALAR = st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False) | st.text(max_size=8)
NESTED = SCALAR | st.lists(SCALAR, max_size=3) | st.dictionaries(st.text(max_size=8), SCALAR, max_size=3)
JSON = NESTED | st.lists(NESTED, max_size=4) | st.dictionaries(st.text(max_size=8), NESTED, max_size=4)
CONFIG_KEYS = st.sampled_from(["num_hidden_layers", "num_attention_heads", "hidden_size", "num_key_value_heads",
                               "head_dim", "vocab_size", "max_position_embeddings", "text_config", "quantization_config",
                               "sliding_window", "sliding_window_pattern", "layer_types", "architectures",
                               "num_local_experts", "torch_dtype", "tie_word_embeddings"])


@FUZZ
@given(st.one_of(JSON, st.dictionaries(CONFIG_KEYS, JSON, max_size=8)))
def test_model_config_json_is_facts_or_a_value_error_naming_the_field(config: object) -> None:
    try:
        models.from_config(config)  # type: ignore[arg-type]
    except ValueError as exc:
        assert str(exc).startswith("config.json "), exc


SECTIONS = st.sampled_from(["settings", "endpoint", "logs", "deployment", "model", "gpus", "host", "metrics", "plan", "notes"])


@FUZZ
@given(st.dictionaries(SECTIONS, JSON, max_size=4))
def test_bundle_is_facts_or_a_usage_error_naming_the_field(tmp_path_factory: pytest.TempPathFactory, sections: dict) -> None:
    path = tmp_path_factory.mktemp("b") / "bundle.json"
    path.write_text(json.dumps({"schema": "llm-doctor.facts/1", **sections}))
    try:
        assert isinstance(read_bundle(str(path)), Facts)
    except BadBundle as exc:
        assert str(exc).startswith(f"{path}: not a readable llm-doctor bundle: ")


@FUZZ
@given(st.binary(max_size=300) | JSON.map(lambda v: json.dumps(v).encode()))
def test_client_config_files(tmp_path_factory: pytest.TempPathFactory, content: bytes) -> None:
    home = tmp_path_factory.mktemp("home")
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_bytes(content)
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_bytes(content)
    resolve(env={}, home=home, cwd=home / "nowhere")


def plan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llm_doctor", "plan", *args], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"})


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ("[1, 2]", "config.json is not a model config: expected a JSON object, got list"),
        ('{"num_hidden_layers": "32", "num_attention_heads": 32}',
         "config.json field num_hidden_layers / n_layer / num_layers: expected int, got str '32'"),
        ('{"num_hidden_layers": 32, "num_attention_heads": 0}',
         "config.json field num_attention_heads / n_head: 0 is not a size (must be above 0)"),
        ('{"num_hidden', "config.json: not a JSON file (JSONDecodeError: "),
    ],
)
def test_plan_with_a_bad_config_json_is_a_usage_error_naming_the_file(tmp_path: Path, config: str, said: str) -> None:
    (tmp_path / "config.json").write_text(config)
    out = plan("--model", str(tmp_path), "--gpu", "H100")
    assert out.returncode == 2, out.stdout + out.stderr
    assert str(tmp_path) in out.stderr and said in out.stderr
    assert "Traceback" not in out.stderr


def test_non_finite_metric_values_are_ignored_and_said(tmp_path: Path) -> None:
    """A gauge of 1e3090 (+Inf) is no number to judge, and `Infinity` is not JSON: `| jq` must work."""
    scrape = tmp_path / "metrics.txt"
    scrape.write_text("# TYPE tgi_queue_size gauge\ntgi_queue_size 1e3090\n# TYPE tgi_batch_current_size gauge\n"
                      "tgi_batch_current_size NaN\ntgi_request_count 111\n")
    out = subprocess.run([sys.executable, "-m", "llm_doctor", "analyze", str(scrape), "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    report = json.loads(out.stdout, parse_constant=lambda c: pytest.fail(f"{c} in the JSON report"))
    assert "waiting" not in report["facts"]["metrics"]["values"]
    assert f"{scrape}: 2 sample(s) with a NaN or infinite value ignored" in report["facts"]["notes"]


CRASH_LOGS = [p.read_text(errors="replace") for p in sorted((FIX / "logs").glob("*.log"))]


@FUZZ
@given(damaged(CRASH_LOGS + LOGS), st.integers(1, 4096))
def test_log_scanner_on_damaged_logs(text: str, block: int) -> None:
    """Cut, garbled and spliced real logs, fed in blocks of any size: typed events, never a traceback,
    the same events whatever the block size (the prefilter changes no result), and a run number
    and line number inside the log for each."""
    from llm_doctor.logparse.scan import LogScanner

    raw = text.encode("utf-8", errors="replace")
    whole = LogScanner()
    whole.start_source("x")
    whole.feed_block(raw)
    facts = whole.finish()
    lines = raw.split(b"\n")
    pieces = LogScanner()
    pieces.start_source("x")
    chunk: list[bytes] = []
    for i, line in enumerate(lines):
        chunk.append(line + (b"\n" if i < len(lines) - 1 else b""))
        if sum(map(len, chunk)) >= block:
            pieces.feed_block(b"".join(chunk))
            chunk = []
    pieces.feed_block(b"".join(chunk))
    other = pieces.finish()
    assert [(e.kind, e.line_no, e.count) for e in facts.events] == [(e.kind, e.line_no, e.count) for e in other.events]
    assert all(0 <= e.run < facts.runs and 1 <= e.line_no <= facts.lines_read for e in facts.events)
