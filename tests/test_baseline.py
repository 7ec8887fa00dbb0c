"""`llm-doctor baseline record` / `compare` against real sockets: small OpenAI-style engines on
127.0.0.1 whose latency, capacity, answers and /metrics each test sets (tests/servers/
streaming_engine.py), the fake NVML for GPU memory, and the CLI run as a user runs it.

Latencies are sleeps of 50-250 ms and tolerances generous where a test is not about latency,
so the busy shared cores this runs on cannot turn scheduling hiccups into findings.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from llm_doctor.baseline import requests
from llm_doctor.baseline.answers import word_diff
from llm_doctor.baseline.compare import compare
from llm_doctor.baseline.model import RequestResult, Run, Throughput
from llm_doctor.baseline.stats import latency_noise, percentile, spread
from tests.nvml import build
from tests.peers.fixtures import clean_env
from tests.servers.http import FakeServer, Reply, Request, free_port
from tests.servers.streaming_engine import StreamingEngine

pytestmark = pytest.mark.timeout(300)

KEY = "sk-Q7vX2mLp9TzR4wB8nK3e5a6b7c8d9e"  # random-looking: fragments of a known key are masked anywhere
ANSWERS = {"6 times 7": "42", "France": "Paris.", "cat": "The cat sat on the mat and slept all day long"}
PROMPTS = [
    {"id": "mult", "messages": [{"role": "user", "content": "What is 6 times 7?"}], "max_tokens": 8,
     "expect": {"kind": "number", "value": 42}},
    {"id": "capital", "messages": [{"role": "user", "content": "Capital of France?"}], "max_tokens": 8, "expect": "Paris"},
    {"id": "story", "prompt": "Tell a story about a cat.", "max_tokens": 16},
]  # fmt: skip
KV_CONFIG = {"block_size": "16", "cache_dtype": "auto", "gpu_memory_utilization": "0.9", "num_gpu_blocks": "1000"}


def engine(**kw: object) -> StreamingEngine:
    kw.setdefault("answers", dict(ANSWERS))
    return StreamingEngine(**kw)  # type: ignore[arg-type]


def answers_then_hangs(app: StreamingEngine, answered: int) -> Callable[[Request], Reply]:
    """`app` for the first `answered` chat requests, then no answer at all until the server stops."""
    posts = itertools.count()
    return lambda req: Reply(hang=True) if req.method == "POST" and next(posts) >= answered else app(req)


@contextmanager
def serving(app: StreamingEngine) -> Iterator[str]:
    with FakeServer(app) as server:
        yield server.url + "/v1"


def cli(args: list[str], home: Path, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("llm-doctor")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "llm_doctor"]
    proc = subprocess.run([*cmd, *args], env=clean_env(home) | (env or {}), cwd=home, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)  # fmt: skip
    for stream in (proc.stdout, proc.stderr):
        assert KEY not in stream, f"the key reached an output:\n{stream}"
    return proc


def prompts_file(home: Path) -> Path:
    path = home / "prompts.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    return path


def record(app: StreamingEngine, home: Path, name: str, *extra: str, env: dict[str, str] | None = None) -> Path:
    out = home / name
    with serving(app) as url:
        proc = cli(["baseline", "record", "--base-url", url, "--api-key", KEY, "--model", "m1",
                    "--prompts", str(prompts_file(home)), "-o", str(out), *extra], home, env)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert KEY not in out.read_text()
    return out


def compare_files(home: Path, *args: str) -> tuple[int, dict]:
    proc = cli(["baseline", "compare", *args, "--format", "json"], home)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def codes(report: dict) -> list[str]:
    return [f["code"] for f in report["findings"]]


TIMING = ("TTFT", "ITL", "end-to-end", "tokens/s")


def named(report: dict) -> list[str]:
    """The codes a test that is not about timing asserts: timing findings are left out, because two
    recordings on busy shared cores may differ in speed by more than any tolerance a test can set."""
    out = []
    for f in report["findings"]:
        if f["code"] in ("baseline.latency_regression", "baseline.throughput_regression"):
            continue
        if f["code"] == "baseline.improved" and all(e.startswith(TIMING) for e in f["evidence"]):
            continue
        out.append(f["code"])
    return out


def gate(report: dict) -> int:
    """The exit code --fail-on error must give for these findings."""
    return 1 if any(f["severity"] == "error" for f in report["findings"]) else 0


def finding(report: dict, code: str) -> dict:
    return next(f for f in report["findings"] if f["code"] == code)


# --- the request set ---------------------------------------------------------------------------

# a right answer for each regex expectation of the shipped set (the other kinds carry their own)
REGEX_RIGHT = {"format-yes-no": "Yes."}


def test_shipped_request_set_parses_and_every_answer_is_checkable() -> None:
    rset = requests.builtin()
    assert (rset.name, rset.version) == ("llm-doctor-default", "1")
    lengths = [sum(len(m["content"]) for m in r.messages) for r in rset.requests]
    assert min(lengths) < 200 and max(lengths) > 2000  # short and long prompts
    scored = [r for r in rset.requests if r.expect is not None]
    assert len(scored) >= 7 and {r.expect.kind for r in scored} == set(requests.KINDS)
    for r in scored:
        kind, value = r.expect.kind, r.expect.value
        right = {"number": f"The answer is {value}.", "json": json.dumps(value), "regex": REGEX_RIGHT.get(r.id)}.get(kind, str(value))
        assert right is not None, f"{r.id}: give REGEX_RIGHT an answer"
        assert requests.score(r.expect, right), (r.id, right)
        assert not requests.score(r.expect, ""), r.id
        assert not requests.score(r.expect, "I do not know."), r.id


def test_scoring_is_strict_and_checkable() -> None:
    E = requests.Expect
    assert requests.score(E("number", 671), "Seats taken: 671")
    assert not requests.score(E("number", 671), "671 seats? No: 670")  # the last number is the answer
    assert requests.score(E("number", 0.7), "0.70")
    assert requests.score(E("number", 1000), "1,000")
    assert requests.score(E("exact", "APPLE"), " APPLE. ")
    assert not requests.score(E("exact", "APPLE"), "APPLE PIE")
    assert requests.score(E("json", {"city": "Lisbon"}), '```json\n{"city": "Lisbon", "x": 1}\n```')
    assert not requests.score(E("json", {"city": "Lisbon"}), '{"city": "Porto"}')


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "prompts.jsonl:1: not JSON"),
        ('{"id": "a", "messages": []}', "`messages` must be a non-empty list"),
        ('{"id": "a", "prompt": "hi", "expect": {"kind": "vibes", "value": 1}}', "`expect` must be"),
        ('{"id": "a", "prompt": "hi", "expect": {"kind": "regex", "value": "("}}', "cannot check the value"),
        ('{"id": "a", "prompt": "hi", "max_tokens": 0}', "`max_tokens` must be"),
    ],
)
def test_a_bad_request_set_is_a_usage_error(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "prompts.jsonl").write_text(line + "\n")
    proc = cli(["baseline", "record", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                "--prompts", str(tmp_path / "prompts.jsonl"), "-o", str(tmp_path / "b.json")], tmp_path)  # fmt: skip
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


# --- the statistics, as pure functions -----------------------------------------------------------


def test_percentiles_and_noise_come_from_the_samples() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
    assert spread([70.0, 100.0, 130.0]) == pytest.approx(0.3)
    assert spread([100.0]) is None  # one sample shows no noise
    assert latency_noise([[90.0, 100.0, 110.0], [50.0, 50.0, 50.0], [10.0, 20.0, 30.0]]) == pytest.approx(0.1)


def synthetic(ttft: list[float], tps: list[float] | None = None) -> Run:
    req = RequestResult("q", output="x", ttft_ms=ttft, itl_ms=[10.0] * len(ttft), e2e_ms=[t + 50 for t in ttft],
                        completion_tokens=[5] * len(ttft))  # fmt: skip
    return Run("m", [req], [Throughput(1, tps or [100.0, 100.0, 100.0])])


def test_a_change_beyond_tolerance_but_within_the_noise_is_not_a_regression() -> None:
    steady = compare(synthetic([100.0, 100.0, 100.0]), synthetic([115.0, 115.0, 115.0]), 0.10)
    assert [f.code for f in steady.findings] == ["baseline.latency_regression"]
    assert "TTFT p50 100.0 ms -> 115.0 ms (+15%" in steady.findings[0].evidence[0]
    noisy = compare(synthetic([70.0, 100.0, 130.0]), synthetic([80.5, 115.0, 149.5]), 0.10)
    assert noisy.findings == []  # +15% is beyond 10% but not beyond the ±60% the repeats show
    within = compare(synthetic([100.0, 100.0, 100.0]), synthetic([108.0, 108.0, 108.0]), 0.10)
    assert within.findings == []


def test_throughput_noise_from_rounds() -> None:
    drop = compare(synthetic([100.0] * 3, [100.0, 100.0, 100.0]), synthetic([100.0] * 3, [80.0, 80.0, 80.0]), 0.10)
    assert [f.code for f in drop.findings] == ["baseline.throughput_regression"]
    wobbly = compare(synthetic([100.0] * 3, [70.0, 100.0, 130.0]), synthetic([100.0] * 3, [56.0, 80.0, 104.0]), 0.10)
    assert wobbly.findings == []


def test_word_diff_shows_what_changed() -> None:
    assert word_diff("The cat slept all day long", "The cat slept all night long") == "The cat slept all [-day-] {+night+} long"


# --- against servers on 127.0.0.1 ----------------------------------------------------------------


def test_slower_server_is_a_latency_regression_and_nothing_else_is_named(tmp_path: Path) -> None:
    before = record(engine(ttft_s=0.05), tmp_path, "before.json")
    after = record(engine(ttft_s=0.25), tmp_path, "after.json")
    rc, report = compare_files(tmp_path, str(before), str(after), "--tolerance", "0.5")
    assert rc == 1
    assert named(report) == []  # nothing but timing: the answers, KV cache and memory are the same
    assert codes(report)[0] == "baseline.latency_regression"  # the cause ranks before its symptom
    ttft = finding(report, "baseline.latency_regression")["evidence"][0]
    assert ttft.startswith("TTFT p50 ")
    side = report["baseline"]["comparisons"][0]
    assert 45 <= side["before"]["latency_ms"]["ttft_ms"]["p50"] < 150
    assert side["after"]["latency_ms"]["ttft_ms"]["p50"] >= 245
    assert side["answers"]["identical"] == ["mult", "capital", "story"]


def slower(recording: Path, factor: float, name: str) -> Path:
    """The same recording with every latency `factor` times longer and every throughput that much
    lower: a shift of exactly known size over exactly the noise the recording measured, whatever the
    load on the machine that recorded it."""
    data = json.loads(recording.read_text())
    for run in data["runs"]:
        for req in run["requests"]:
            for key in ("ttft_ms", "e2e_ms"):
                req[key] = [round(v * factor, 1) for v in req[key]]
        for t in run["throughput"]:
            t["tokens_per_s"] = [round(v / factor, 2) for v in t["tokens_per_s"]]
    out = recording.with_name(name)
    out.write_text(json.dumps(data))
    return out


def test_noise_within_tolerance_is_not_flagged(tmp_path: Path) -> None:
    """The server wobbles ±30% from request to request; the second recording is 15% slower: beyond a
    10% tolerance, but not beyond the noise the repeats show, so it is not called a regression."""
    before = record(engine(ttft_s=0.2, jitter=0.3), tmp_path, "before.json")
    after = slower(before, 1.15, "after.json")
    rc, report = compare_files(tmp_path, str(before), str(after), "--tolerance", "0.10")
    assert (rc, codes(report)) == (0, [])
    assert report["status"] == "ok"
    noise = report["baseline"]["comparisons"][0]["before"]["latency_ms"]["ttft_ms"]["noise"]
    assert noise >= 0.2  # at least the ±30% jitter, measured from the repeats (a busy machine adds its own)
    # the same shift with no noise to hide in is a regression: the judgement, not the jitter, keeps it quiet
    steady = record(engine(ttft_s=0.2), tmp_path, "steady.json")
    rc, report = compare_files(tmp_path, str(steady), str(slower(steady, 3.0, "steady-after.json")), "--tolerance", "0.10")
    assert "baseline.latency_regression" in codes(report)


def test_throughput_limit_is_a_throughput_regression(tmp_path: Path) -> None:
    """Same speed per request, but the second server generates one request at a time."""
    words = "one two three four five six seven eight nine ten eleven twelve"
    story = {"6 times 7": "42, " + words, "France": "Paris, " + words, "cat": words}
    before = record(engine(ttft_s=0.05, itl_s=0.03, slots=8, answers=story), tmp_path, "before.json")
    after = record(engine(ttft_s=0.05, itl_s=0.03, slots=1, answers=story), tmp_path, "after.json")
    rc, report = compare_files(tmp_path, str(before), str(after), "--tolerance", "0.4")
    assert "baseline.throughput_regression" in codes(report) and named(report) == [] and rc == 1
    evidence = finding(report, "baseline.throughput_regression")["evidence"]
    assert any("tokens/s at concurrency 4 (-" in e for e in evidence), evidence


def test_a_scored_answer_that_turns_wrong_is_a_quality_drop(tmp_path: Path) -> None:
    before = record(engine(ttft_s=0.1), tmp_path, "before.json")
    after = record(engine(ttft_s=0.1, answers=ANSWERS | {"6 times 7": "43"}), tmp_path, "after.json")
    rc, report = compare_files(tmp_path, str(before), str(after), "--tolerance", "0.5")
    assert (rc, named(report)) == (1, ["baseline.quality_drop"])
    f = finding(report, "baseline.quality_drop")
    assert f["severity"] == "error"
    assert f["evidence"][0] == "mult: expected number 42; was '42', now '43'"
    assert "quality score 2/2 -> 1/2" in f["evidence"]
    assert "mult: [-42-] {+43+}" in f["evidence"]


def test_a_subtly_different_answer_is_named_as_a_warning(tmp_path: Path) -> None:
    before = record(engine(ttft_s=0.1), tmp_path, "before.json")
    after = record(engine(ttft_s=0.1, answers=ANSWERS | {"cat": "The cat sat on the mat and slept all night long"}),
                   tmp_path, "after.json")  # fmt: skip
    rc, report = compare_files(tmp_path, str(before), str(after), "--tolerance", "0.5")
    assert (rc, named(report)) == (gate(report), ["baseline.quality_drop"])  # a warning: fails only --fail-on warn
    f = finding(report, "baseline.quality_drop")
    assert f["severity"] == "warn" and f["title"] == "1 of 3 answers changed (no scored answer got worse)"
    assert "story: The cat sat … and slept all [-day-] {+night+} long" in f["evidence"]
    proc = cli(["baseline", "compare", str(before), str(after), "--tolerance", "0.5", "--fail-on", "warn"], tmp_path)
    assert proc.returncode == 1 and "2 identical, 1 similar, 0 different" in proc.stdout


def test_fp8_kv_cache_that_did_not_grow_the_cache_is_a_flag_with_no_effect(tmp_path: Path) -> None:
    before = record(engine(ttft_s=0.1, cache_config=KV_CONFIG), tmp_path, "before.json")
    inert = record(engine(ttft_s=0.1, cache_config=KV_CONFIG | {"cache_dtype": "fp8"}), tmp_path, "inert.json")
    applied = record(engine(ttft_s=0.1, cache_config=KV_CONFIG | {"cache_dtype": "fp8", "num_gpu_blocks": "2000"}),
                     tmp_path, "applied.json")  # fmt: skip
    rc, report = compare_files(tmp_path, str(before), str(inert), "--tolerance", "0.5")
    assert (rc, named(report)) == (gate(report), ["baseline.no_effect"])
    f = finding(report, "baseline.no_effect")
    assert f["title"] == "kv_cache_dtype auto -> fp8, but the KV cache did not grow (16,000 -> 16,000 tokens)"
    assert f["evidence"][0] == "kv_cache_dtype: auto (before.json) -> fp8 (inert.json), as the server reports it"
    rc, report = compare_files(tmp_path, str(before), str(applied), "--tolerance", "0.5")
    assert (rc, named(report)) == (gate(report), ["baseline.improved"])  # the flag worked: said so, as info
    assert "KV cache tokens: +100%, beyond the 50% tolerance and the ±0% noise" in finding(report, "baseline.improved")["evidence"]
    assert report["baseline"]["comparisons"][0]["after"]["kv_cache_tokens"] == 32000
    assert report["baseline"]["comparisons"][0]["config_changes"] == [
        {"arg": "kv_cache_dtype", "before": "auto", "after": "fp8"},
        {"arg": "num_gpu_blocks", "before": "1000", "after": "2000"},
    ]


@pytest.fixture(scope="module")
def fake_nvml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build.compile_fake(tmp_path_factory.mktemp("nvml"))


def test_gpu_memory_growth_from_nvml(tmp_path: Path, fake_nvml: Path) -> None:
    gpus = {"LD_LIBRARY_PATH": str(fake_nvml.parent), "FAKE_NVML_GPUS": "2", "FAKE_NVML_TOTAL_MIB": "81559"}
    before = record(engine(ttft_s=0.1), tmp_path, "before.json", env=gpus | {"FAKE_NVML_USED_MIB": "20000,20000"})
    after = record(engine(ttft_s=0.1), tmp_path, "after.json", env=gpus | {"FAKE_NVML_USED_MIB": "26000,26000"})
    same = record(engine(ttft_s=0.1), tmp_path, "same.json", env=gpus | {"FAKE_NVML_USED_MIB": "20500,20500"})
    rc, report = compare_files(tmp_path, str(before), str(after), "--tolerance", "0.2")
    assert (rc, named(report)) == (gate(report), ["baseline.memory_growth"])
    assert finding(report, "baseline.memory_growth")["evidence"][0].startswith(
        "GPU memory used 40,000 MiB -> 52,000 MiB of 163,118 MiB (+30%, +12,000 MiB)"
    )
    rc, report = compare_files(tmp_path, str(before), str(same), "--tolerance", "0.2")
    assert (rc, named(report)) == (gate(report), [])  # +2.5% is within the tolerance


def test_models_behind_one_endpoint_are_ranked(tmp_path: Path) -> None:
    # 20x apart, so that what two busy shared cores add to every request (tenths of a second) cannot
    # bring the gap under the 0.5 tolerance the comparison below is judged at; the small model's tokens
    # also come 6x faster, so that the delay busy cores add to each token (seen: 11 -> 17 ms at the same
    # itl_s) cannot make its inter-token latency look like a regression and outrank the quality drop
    small = engine(ttft_s=0.02, itl_s=0.01, answers=ANSWERS | {"6 times 7": "41"})
    app = engine(ttft_s=0.4, itl_s=0.06, by_model={"small-q4": small})
    with serving(app) as url:
        proc = cli(["baseline", "record", "--base-url", url, "--api-key", KEY, "--model", "big-fp16", "--model", "small-q4",
                    "--prompts", str(prompts_file(tmp_path)), "-o", str(tmp_path / "models.json")], tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "big-fp16: TTFT p50" in proc.stdout and "small-q4: TTFT p50" in proc.stdout
    text = cli(["baseline", "compare", str(tmp_path / "models.json"), "--tolerance", "0.5"], tmp_path)
    assert text.returncode == 1, text.stdout
    assert "Ranking (1 = best)" in text.stdout
    ranking = text.stdout.split("Ranking (1 = best)")[1]
    big = next(line for line in ranking.splitlines() if line.startswith("big-fp16"))
    small_line = next(line for line in ranking.splitlines() if line.startswith("small-q4"))
    assert "100% (#1)" in big and "50% (#2)" in small_line  # quality
    assert "(#1)" in small_line.split()[2]  # TTFT: the small model is faster
    rc, report = compare_files(tmp_path, str(tmp_path / "models.json"), "--tolerance", "0.5")
    assert named(report) == ["baseline.quality_drop"] and "baseline.improved" in codes(report)  # wrong, but faster
    assert report["findings"][0]["title"].startswith("small-q4 vs big-fp16: 1 answer that was right is now wrong")


def test_the_file_is_plain_json_with_a_schema_masked_key_and_stable_keys(tmp_path: Path) -> None:
    first = json.loads(record(engine(ttft_s=0.05), tmp_path, "one.json").read_text())
    second = json.loads(record(engine(ttft_s=0.05), tmp_path, "two.json").read_text())
    assert first["schema"] == "llm-doctor.baseline/1"
    assert first["api_key"] == f"{KEY[:3]}...{KEY[-4:]}"
    assert list(first) == list(second) and list(first["runs"][0]["requests"][0]) == list(second["runs"][0]["requests"][0])
    req = first["runs"][0]["requests"][0]
    assert req["id"] == "mult" and req["output"] == "42" and req["correct"] is True and len(req["ttft_ms"]) == 3
    assert first["runs"][0]["server"]["engine_version"] == "0.10.1.1"  # from GET /version
    assert [t["concurrency"] for t in first["runs"][0]["throughput"]] == [1, 4]
    text = (tmp_path / "one.json").read_text()
    assert '"ttft_ms": [' in text and "\n" not in text.split('"ttft_ms": [')[1].split("]")[0]  # samples on one line
    rc, report = compare_files(tmp_path, str(tmp_path / "one.json"), str(tmp_path / "one.json"))
    assert (rc, codes(report)) == (0, [])  # a recording against itself differs in nothing


def test_bad_baseline_files_are_usage_errors(tmp_path: Path) -> None:
    good = record(engine(ttft_s=0.05), tmp_path, "good.json")
    (tmp_path / "notjson.json").write_text("{nope")
    (tmp_path / "report.json").write_text(json.dumps({"schema": "llm-doctor.report/1"}))
    broken = json.loads(good.read_text())
    broken["runs"][0]["requests"][0]["ttft_ms"] = "fast"
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    cases = {
        "notjson.json": "not JSON",
        "report.json": "not a baseline file (schema 'llm-doctor.report/1'",
        "broken.json": "malformed baseline (SchemaError: runs[0].requests[0].ttft_ms: expected a list, got str 'fast')",
        "missing.json": "cannot read it",
    }
    for name, message in cases.items():
        proc = cli(["baseline", "compare", str(good), str(tmp_path / name)], tmp_path)
        assert proc.returncode == 2 and message in proc.stderr, (name, proc.stderr)
        assert "Traceback" not in proc.stderr
    proc = cli(["baseline", "compare", str(good)], tmp_path)
    assert proc.returncode == 2 and "compare needs two recordings" in proc.stderr


def test_an_unreachable_endpoint_writes_nothing_and_says_why(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    proc = cli(["baseline", "record", "--base-url", f"http://127.0.0.1:{free_port()}/v1", "--api-key", KEY,
                "--model", "m", "--prompts", str(prompts_file(tmp_path)), "-o", str(out)], tmp_path)  # fmt: skip
    assert proc.returncode == 1
    assert "no request was answered (m: request mult: ConnectError" in proc.stderr
    assert "llm-doctor run --only access" in proc.stderr and not out.exists()


def test_the_deadline_bounds_a_record_and_the_file_says_it_is_incomplete(tmp_path: Path) -> None:
    """The server answers the warm-up and one kept request, then never again: the deadline cuts the
    record however fast this machine is, and the deadline has room for the answered part."""
    out = tmp_path / "cut.json"
    start = time.monotonic()
    with FakeServer(answers_then_hangs(engine(), len(PROMPTS) + 1)) as server:
        proc = cli(["baseline", "record", "--base-url", server.url + "/v1", "--model", "m1", "--prompts",
                    str(prompts_file(tmp_path)), "--deadline", "10", "-o", str(out)], tmp_path)  # fmt: skip
    assert time.monotonic() - start < 90
    assert proc.returncode == 1 and "incomplete recording" in proc.stderr
    data = json.loads(out.read_text())
    assert data["complete"] is False
    assert "the --deadline of 10 s ran out before every request was sent" in data["problems"]
    good = record(engine(ttft_s=0.05), tmp_path, "good.json")
    rc, report = compare_files(tmp_path, str(good), str(out), "--tolerance", "0.5")
    assert rc == 1 and report["status"] in ("incomplete", "error", "warn")
    assert any("cut.json" in line for line in report["baseline"]["incomplete"])


def test_kv_capacity_and_arguments_from_real_engine_logs(tmp_path: Path) -> None:
    """Two real vLLM 0.10.1.1 start-up logs of the same model at gpu_memory_utilization 0.25 and
    0.5 (fixtures/engine_args/*.source.txt): the KV cache grew with the memory fraction, so the
    change took effect: `improved`, and no `no_effect`."""
    logs = Path(__file__).resolve().parent.parent / "fixtures" / "engine_args"
    before = record(engine(ttft_s=0.1), tmp_path, "gmu025.json", "--log", str(logs / "v0.10.1.1-v1-1xA100-0.25gmu.log"))
    after = record(engine(ttft_s=0.1), tmp_path, "gmu05.json", "--log", str(logs / "v0.10.1.1-v1-1xA100-qwen2-7b-hardwrapped.log"))
    server = json.loads(after.read_text())["runs"][0]["server"]
    assert (server["engine"], server["engine_version"]) == ("vllm", "0.10.1.1")
    assert (server["kv_cache_tokens"], server["kv_cache_tokens_source"]) == (464848, "log: GPU KV cache size")
    assert (server["args"]["gpu_memory_utilization"], server["args_source"]["gpu_memory_utilization"]) == ("0.5", "log")
    rc, report = compare_files(tmp_path, str(before), str(after), "--tolerance", "0.5")
    assert (rc, named(report)) == (gate(report), ["baseline.improved"])
    c = report["baseline"]["comparisons"][0]
    assert c["config_changes"] == [{"arg": "gpu_memory_utilization", "before": "0.25", "after": "0.5"}]
    assert (c["before"]["kv_cache_tokens"], c["after"]["kv_cache_tokens"]) == (93872, 464848)


def test_a_change_after_which_nothing_moved_is_named_as_info() -> None:
    before, after = synthetic([100.0] * 3), synthetic([101.0] * 3)
    before.server.args, before.server.args_source = {"max_num_seqs": "256"}, {"max_num_seqs": "process"}
    after.server.args = {"max_num_seqs": "512", "enable_chunked_prefill": "True"}
    after.server.args_source = {"max_num_seqs": "process", "enable_chunked_prefill": "process"}
    c = compare(before, after, 0.10, ("a.json", "b.json"))
    assert c.config_changes == [("max_num_seqs", "256", "512"), ("enable_chunked_prefill", "-", "True")]
    assert [(f.code, f.severity) for f in c.findings] == [("baseline.no_effect", "info")]
    assert c.findings[0].evidence[0] == "configuration change: max_num_seqs 256 (a.json) -> 512 (b.json)"
    moved = compare(before, synthetic([150.0] * 3), 0.10)
    assert [f.code for f in moved.findings] == ["baseline.latency_regression"]  # something moved: no info


def test_an_unread_source_is_not_a_configuration_change() -> None:
    before, after = synthetic([100.0] * 3), synthetic([100.0] * 3)
    before.server.args, before.server.args_source = {"kv_cache_dtype": "fp8"}, {"kv_cache_dtype": "metrics"}
    assert compare(before, after, 0.10).config_changes == []  # /metrics not read the second time


def test_a_strict_server_that_refuses_seed_and_stream_options_is_still_recorded(tmp_path: Path) -> None:
    out = record(engine(ttft_s=0.05, strict=True), tmp_path, "strict.json")
    data = json.loads(out.read_text())
    assert data["complete"] is True and data["options"]["seed"] is None
    story = next(r for r in data["runs"][0]["requests"] if r["id"] == "story")
    assert story["completion_tokens"] == [11, 11, 11]  # counted from the stream, without usage
    assert story["output"] == ANSWERS["cat"]


@pytest.mark.parametrize(
    ("scrape", "engine_name", "kv_tokens", "source"),
    [
        ("vllm-v0-metrics-excerpt-cache-config-info-aibrix.txt", "vllm", 81767 * 16,
         "metrics vllm:cache_config_info num_gpu_blocks x block_size"),
        ("sglang-v0.3-era-metrics-gemma2-9b.txt", "sglang", 161721, "metrics sglang:max_total_num_tokens"),
    ],
)  # fmt: skip
def test_kv_capacity_from_real_metrics_scrapes(tmp_path: Path, scrape: str, engine_name: str, kv_tokens: int, source: str) -> None:
    text = (Path(__file__).resolve().parent.parent / "fixtures" / "metrics" / scrape).read_text()
    out = record(engine(ttft_s=0.05, metrics_text=text), tmp_path, "m.json")
    server = json.loads(out.read_text())["runs"][0]["server"]
    assert (server["engine"], server["kv_cache_tokens"], server["kv_cache_tokens_source"]) == (engine_name, kv_tokens, source)
    if engine_name == "vllm":
        assert server["args"]["kv_cache_dtype"] == "auto" and server["args"]["gpu_memory_utilization"] == "0.9"
        assert server["args_source"]["num_gpu_blocks"] == "metrics"


def test_a_latency_flag_that_did_not_help_and_an_improvement_are_both_named() -> None:
    before, after = synthetic([100.0] * 3), synthetic([60.0] * 3)
    before.server.args, before.server.args_source = {"enforce_eager": "True"}, {"enforce_eager": "process"}
    after.server.args, after.server.args_source = {"enforce_eager": "False"}, {"enforce_eager": "process"}
    c = compare(before, after, 0.10)
    assert [(f.code, f.severity) for f in c.findings] == [("baseline.no_effect", "warn"), ("baseline.improved", "info")]
    assert c.findings[0].title == "enforce_eager True -> False, but inter-token latency did not improve (10 -> 10 ms)"
    assert c.findings[1].evidence[0] == "TTFT p50: -40%, beyond the 10% tolerance and the ±0% noise"


def test_a_scored_answer_that_became_right_is_an_improvement_not_a_quality_drop() -> None:
    before, after = synthetic([100.0] * 3), synthetic([100.0] * 3)
    before.requests[0].expect, after.requests[0].expect = {"kind": "number", "value": 42}, {"kind": "number", "value": 42}
    before.requests[0].output, after.requests[0].output = "41", "42"
    c = compare(before, after, 0.10)
    assert [(f.code, f.evidence) for f in c.findings] == [("baseline.improved", ["quality score 0/1 -> 1/1"])]


def test_a_flag_the_engine_reports_otherwise_was_not_applied(tmp_path: Path) -> None:
    """The start-up log (a real vLLM 0.10.1.1 log) says gpu_memory_utilization 0.5 was given; the
    engine's own /metrics says 0.9: the flag is named as not applied."""
    log = Path(__file__).resolve().parent.parent / "fixtures" / "engine_args" / "v0.10.1.1-v1-1xA100-qwen2-7b-hardwrapped.log"
    before = record(engine(ttft_s=0.1, cache_config=KV_CONFIG), tmp_path, "before.json")
    after = record(engine(ttft_s=0.1, cache_config=KV_CONFIG), tmp_path, "after.json", "--log", str(log))
    assert json.loads(after.read_text())["runs"][0]["server"]["unapplied"] == {"gpu_memory_utilization": "0.5 (log)"}
    rc, report = compare_files(tmp_path, str(before), str(after), "--tolerance", "0.5")
    assert (rc, named(report)) == (gate(report), ["baseline.no_effect"])
    assert finding(report, "baseline.no_effect")["evidence"] == [
        "gpu_memory_utilization: asked 0.5 (log), but the engine reports 0.9 (/metrics) in after.json"
    ]
