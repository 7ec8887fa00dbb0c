"""`llm-doctor baseline` against the real llama-server + Gemma-3-270M (tests/peers/): record the
same request set on two settings (context 1024 vs 2048, one slot each time), then compare.

What is asserted is what the engine really says: its KV capacity from /props (n_ctx), its command
line from the running process (key masked), identical answers under temperature 0, and the
configuration change named; and, with the fake NVML listing the real engine's pid beside another
process, that GPU memory is the engine's own. Latency on two busy shared cores is not asserted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.nvml import build
from tests.peers.fixtures import LLAMA_ALIAS, LLAMA_KEY, clean_env, free_port, manifest_entry, running
from tests.test_baseline import cli

pytestmark = pytest.mark.timeout(600)

PROMPTS = [
    {"id": "capital", "messages": [{"role": "user", "content": "What is the capital of France? One word."}],
     "max_tokens": 8, "expect": "Paris"},
    {"id": "count", "prompt": "Count from 1 to 5.", "max_tokens": 16},
]  # fmt: skip


def engine_pid(port: int) -> int:
    import psutil

    return next(p.pid for p in psutil.process_iter(["cmdline"]) if "--port" in (p.info["cmdline"] or [])
                and str(port) in p.info["cmdline"] and "--alias" in p.info["cmdline"])  # fmt: skip


def record_on(ctx: int, work: Path, prompts: Path, nvml: Path | None = None) -> dict:
    server = manifest_entry("llama_server", "binary")
    model = manifest_entry("gemma_gguf", "path")
    port = free_port()
    cmd = [server["binary"], "-m", model["path"], "--alias", LLAMA_ALIAS, "--host", "127.0.0.1", "--port", str(port),
           "--api-key", LLAMA_KEY, "-c", str(ctx), "-t", "1", "--metrics", "--no-webui"]  # fmt: skip
    out = work / f"ctx{ctx}.json"
    with running(cmd, f"http://127.0.0.1:{port}/health", work / f"llama-{ctx}.log", work, clean_env(work)):
        env = {}
        if nvml is not None:  # the fake NVML lists this engine and another process on the GPU
            env = {"LD_LIBRARY_PATH": str(nvml.parent), "FAKE_NVML_USED_MIB": "61500",
                   "FAKE_NVML_PROCS": f"0:{engine_pid(port)}:1500;0:1:60000"}  # fmt: skip
        proc = cli(["baseline", "record", "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key", LLAMA_KEY,
                    "--model", LLAMA_ALIAS, "--prompts", str(prompts), "--repeat", "2", "--concurrency", "2",
                    "--deadline", "300", "-o", str(out)], work, env, timeout=400)  # fmt: skip
    assert LLAMA_KEY not in proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = out.read_text()
    assert LLAMA_KEY not in text
    return json.loads(text)


def test_record_and_compare_two_context_sizes_on_a_real_engine(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    nvml = build.compile_fake(tmp_path / "nvml")
    small, large = record_on(1024, tmp_path, prompts), record_on(2048, tmp_path, prompts, nvml)
    memory = large["runs"][0]["server"]
    assert memory["gpu_memory_used_mib"] == [1500.0, 1500.0]  # the engine's own process, not the 61,500 in use
    assert memory["gpu_memory_scope"].startswith("engine processes ")
    for data, ctx in ((small, 1024), (large, 2048)):
        run = data["runs"][0]
        server = run["server"]
        assert (server["engine"], server["kv_cache_tokens"]) == ("llamacpp", ctx)
        assert server["kv_cache_tokens_source"] == "llama-server /props n_ctx"
        assert f"-c {ctx}" in server["args"]["command_line"]
        assert f"--api-key {LLAMA_KEY[:3]}...{LLAMA_KEY[-4:]}" in server["args"]["command_line"]
        assert server["args_source"]["command_line"] == "process"
        for req in run["requests"]:
            assert req["errors"] == [] and len(req["ttft_ms"]) == 2 and req["output"]
            assert all(t > 0 for t in req["completion_tokens"])
        assert [t["concurrency"] for t in run["throughput"]] == [1, 2]
        assert all(v > 0 for t in run["throughput"] for v in t["tokens_per_s"])
    assert [r["output"] for r in small["runs"][0]["requests"]] == [r["output"] for r in large["runs"][0]["requests"]]

    proc = cli(["baseline", "compare", str(tmp_path / "ctx1024.json"), str(tmp_path / "ctx2048.json"),
                "--tolerance", "0.5", "--format", "json"], tmp_path)  # fmt: skip
    report = json.loads(proc.stdout)
    codes = {f["code"] for f in report["findings"]}
    # the answers are the same and a larger context grows the KV capacity: nothing else but (on
    # busy shared cores, possibly) timing may be named
    assert "baseline.improved" in codes  # the KV capacity doubled
    assert codes - {"baseline.improved"} <= {"baseline.latency_regression", "baseline.throughput_regression"}, report["findings"]
    c = report["baseline"]["comparisons"][0]
    assert (c["before"]["kv_cache_tokens"], c["after"]["kv_cache_tokens"]) == (1024, 2048)
    assert {"arg": "n_ctx", "before": "1024", "after": "2048"} in c["config_changes"]
    assert c["answers"]["identical"] == ["capital", "count"]
    text = cli(["baseline", "compare", str(tmp_path / "ctx1024.json"), str(tmp_path / "ctx2048.json"), "--tolerance", "0.5"], tmp_path)
    assert "KV cache tokens" in text.stdout and "1,024" in text.stdout and "2,048" in text.stdout
    assert "configuration: n_ctx 1024 -> 2048" in text.stdout
