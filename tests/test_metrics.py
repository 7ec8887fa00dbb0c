"""/metrics: the parser on real scrapes (vLLM V0/V1, SGLang old/new, TGI), and the collector
against a real HTTP server on 127.0.0.1 that serves real scrape text and moves its counters."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_doctor.collect import metrics
from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline
from llm_doctor.logparse import metrics_text as mt

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "metrics"


def scrape(name: str) -> mt.Scrape:
    return mt.summarise((FIX / name).read_text())


def test_vllm_v1_names_and_created_gauges_are_not_counters():
    s = scrape("vllm-v1-metrics-head40-engine-label-created-gauges.txt")
    assert s.engine == "vllm" and s.model_name == "llama-vllm-single"
    assert s.values["kv_cache_usage"] == 0.0 and s.values["preemptions_total"] == 0.0
    assert "prefix_cache_hit_rate" not in s.values  # 0 queries: no rate
    assert all("created" not in raw for raw in s.raw.values())


def test_vllm_v0_names_and_cache_config_info():
    s = scrape("vllm-v0-metrics-excerpt-cache-config-info-aibrix.txt")
    assert s.raw["kv_cache_usage"] == "vllm:gpu_cache_usage_perc 0"
    assert s.cache_config["gpu_memory_utilization"] == "0.9" and s.cache_config["num_gpu_blocks"] == "81767"
    assert "prefix_cache_hit_rate" not in s.values  # -1 = no data in V0
    assert s.values["generation_tokens_total"] == 955


def test_vllm_ttft_histogram_quantiles():
    s = scrape("vllm-v0-metrics-ttft-histogram-datadog-fixture-excerpt.txt")
    h = s.histograms["ttft"]
    assert h.count > 0
    values = mt.histogram_values("ttft", h)
    assert values["ttft_mean_s"] == pytest.approx(h.sum / h.count)
    assert values["ttft_p50_s"] <= values["ttft_p90_s"] <= values["ttft_p99_s"]


def test_sglang_new_and_old_labels_and_percent_hit_rate():
    new = scrape("sglang-0.4-era-metrics-llama31-8b-model_name-label.txt")
    assert new.engine == "sglang" and new.model_name == "meta-llama/Llama-3.1-8B-Instruct"
    assert (new.values["running"], new.values["waiting"], new.values["kv_cache_usage"]) == (162, 2826, 0.28)
    assert new.values["prompt_tokens_total"] == 8128902
    old = scrape("sglang-v0.3-era-metrics-gemma2-9b.txt")  # CRLF line ends, name= label
    assert old.model_name == "google/gemma-2-9b-it"
    assert old.values["prefix_cache_hit_rate"] == pytest.approx(0.1061)
    assert old.values["max_total_tokens"] == 161721


def test_tgi():
    s = scrape("tgi-metrics-excerpt-datadog-fixture.txt")
    assert s.engine == "tgi" and s.values["waiting"] == 0 and s.values["running"] == 0


def test_truncated_and_garbage_lines_do_not_lose_the_rest():
    text = (FIX / "vllm-v1-metrics-head40-engine-label-created-gauges.txt").read_text()
    s = mt.summarise(text + 'vllm:num_requests_waiting{engine="0" BROKEN\n<html>proxy</html>\n')
    assert s.values["running"] == 0.0 and s.problems


def test_content_sniff():
    assert mt.looks_like_metrics((FIX / "tgi-metrics-excerpt-datadog-fixture.txt").read_text())
    assert not mt.looks_like_metrics("INFO 04-16 10:27:28 [api_server.py:1035] Starting vLLM API server\n")


def test_analyze_scrape_fills_deployment_from_cache_config():
    facts = load_paths([str(FIX / "vllm-v0-metrics-excerpt-cache-config-info-aibrix.txt")], Deadline(10))
    assert facts.metrics.available and facts.metrics.engine == "vllm"
    assert facts.deployment.gpu_memory_utilization == 0.9
    assert facts.deployment.enable_prefix_caching is False
    assert facts.deployment.sources["enable_prefix_caching"] == "metrics"


class Engine:
    """A tiny real HTTP server: /metrics with the V1 scrape whose counters advance per request."""

    def __init__(self, key: str | None) -> None:
        self.key, self.hits = key, 0
        self.base = (FIX / "vllm-v1-metrics-head40-engine-label-created-gauges.txt").read_text()
        engine = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                if engine.key and self.headers.get("Authorization") != f"Bearer {engine.key}":
                    self.send_response(401)
                    self.end_headers()
                    return
                if self.path != "/metrics":
                    self.send_response(404)
                    self.end_headers()
                    return
                engine.hits += 1
                n = engine.hits
                body = (engine.base.replace('vllm:generation_tokens_total{engine="0",model_name="llama-vllm-single"} 0.0',
                                            f'vllm:generation_tokens_total{{engine="0",model_name="llama-vllm-single"}} {1000.0 * n}')
                        .replace('vllm:num_preemptions_total{engine="0",model_name="llama-vllm-single"} 0.0',
                                 f'vllm:num_preemptions_total{{engine="0",model_name="llama-vllm-single"}} {5.0 * (n - 1)}')
                        .replace('vllm:kv_cache_usage_perc{engine="0",model_name="llama-vllm-single"} 0.0',
                                 'vllm:kv_cache_usage_perc{engine="0",model_name="llama-vllm-single"} 0.97')
                        .replace('vllm:num_requests_running{engine="0",model_name="llama-vllm-single"} 0.0',
                                 'vllm:num_requests_running{engine="0",model_name="llama-vllm-single"} 48.0'))
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def engine() -> Iterator[Engine]:
    e = Engine(key="sk-metrics-test-key")
    yield e
    e.server.shutdown()


def test_collector_two_scrapes_give_rates(engine):
    m = metrics.collect(engine.url + "/metrics", "sk-metrics-test-key", sample_s=0.5, timeout=5)
    assert m.available and engine.hits == 2
    assert m.window_s and m.window_s >= 0.5
    assert m.values["generation_tokens_per_s"] == pytest.approx(1000 / m.window_s, rel=0.05)
    assert m.values["preemptions_per_s"] > 0


def test_collector_reports_a_missing_key(engine):
    m = metrics.collect(engine.url + "/metrics", None, sample_s=0, timeout=5)
    assert not m.available and "401" in m.reason and "bearer" in m.reason


def test_collector_connection_refused_is_a_reason():
    m = metrics.collect("http://127.0.0.1:1/metrics", None, sample_s=0, timeout=2)
    assert not m.available and "ConnectError" in m.reason


def test_default_url_is_the_server_root():
    assert metrics.default_url("http://10.0.0.5:8000/v1") == "http://10.0.0.5:8000/metrics"


def test_live_scrape_drives_the_kv_pressure_check(engine):
    from llm_doctor.engine import load_checks, run_checks, select
    from llm_doctor.facts import Facts

    facts = Facts()
    metrics.merge_into(facts, metrics.collect(engine.url + "/metrics", "sk-metrics-test-key", sample_s=0.3, timeout=5))
    res = next(r for r in run_checks(facts, select(load_checks(), ["perf.kv_cache_metrics"])) if r.id == "perf.kv_cache_metrics")
    (finding,) = res.findings
    assert finding.code == "perf.kv_cache_pressure"
    assert "vllm:kv_cache_usage_perc 0.97" in finding.evidence
    # 48 running at 97%: 48 * 0.8 / 0.97 = 39.6 -> 39 sequences keep it near 80%
    assert finding.fixes[0].command == "--max-num-seqs 39"


def test_runaway_metrics_endpoint_is_capped(monkeypatch):
    """An endpoint that never stops sending: the scrape stops at the cap, memory stays bounded."""

    class Endless(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            line = b'vllm:num_requests_running{engine="0"} 1.0\n' * 1000
            try:
                for _ in range(100_000):
                    self.wfile.write(line)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *a) -> None:
            pass

    monkeypatch.setattr(mt, "MAX_SCRAPE_BYTES", 256 * 1024)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        text = metrics.scrape(f"http://127.0.0.1:{server.server_address[1]}/metrics", timeout=10)
    finally:
        server.shutdown()
    assert len(text) <= 256 * 1024 and text.startswith("vllm:num_requests_running")


def test_kv_pressure_on_an_a100_offers_no_fp8_cache(engine):
    """The same live scrape on an A100 (compute capability 8.0, from NVML): no --kv-cache-dtype fp8."""
    from llm_doctor.engine import load_checks, run_checks, select
    from llm_doctor.facts import Facts
    from llm_doctor.facts.gpu import Gpu, GpuFacts

    facts = Facts()
    metrics.merge_into(facts, metrics.collect(engine.url + "/metrics", "sk-metrics-test-key", sample_s=0.3, timeout=5))

    def commands() -> list[str | None]:
        res = next(r for r in run_checks(facts, select(load_checks(), ["perf.kv_cache_metrics"])) if r.id == "perf.kv_cache_metrics")
        return [x.command for x in res.findings[0].fixes]

    assert "--kv-cache-dtype fp8" in commands()  # GPU unknown: offered, labelled with its requirement
    facts.gpus = GpuFacts(available=True, gpus=[Gpu(index=0, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0")])
    assert "--kv-cache-dtype fp8" not in commands()
