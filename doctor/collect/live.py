"""Live load/perf facts for `llm-doctor run`: GPUs (NVML), host and engine processes (psutil),
the engine's /metrics, and the opt-in concurrency probe.

GPU sampling and the two /metrics scrapes both wait out the --sample window, so they run side by
side in threads: `run` costs one window, not two. Each part is guarded on its own.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from llm_doctor.engine import Deadline
from llm_doctor.facts import Facts
from llm_doctor.facts.inputs import InputGap


def collect(facts: Facts, settings: Any, opts: Any, deadline: Deadline, say: Any) -> None:
    from llm_doctor.collect import endpoint, gpu, guarded, host, metrics, safe_http

    base = settings.base_url.value or ""
    url_error = endpoint.split_base(base)[2] if base.strip() else ""
    if url_error:  # nothing to scrape or probe there; the access layer names the fault, or else a gap does
        if facts.endpoint is None:
            facts.gaps.append(InputGap(base, f"the base URL is malformed: {url_error}"))
        base = ""
    key = settings.api_key.value
    url = opts.metrics_url or (metrics.default_url(base) if base else None)
    metrics_key = key if url and base and safe_http.same_origin(url, base) else None  # the key belongs to its origin
    say("load", f"sampling GPUs for {opts.sample:g} s")
    with ThreadPoolExecutor(max_workers=3) as pool:
        f_gpu = pool.submit(guarded, facts, "gpu", lambda: gpu.collect(opts.sample, deadline))
        f_host = pool.submit(guarded, facts, "host", lambda: host.collect(min(opts.sample, 1.0)))
        f_metrics = (
            pool.submit(guarded, facts, "metrics", lambda: metrics.collect(url, metrics_key, opts.sample, opts.timeout, deadline))
            if url and "perf" in opts.layers
            else None
        )
        facts.gpus = f_gpu.result()
        facts.host = f_host.result()
        m = f_metrics.result() if f_metrics else None
    if m is not None:
        metrics.merge_into(facts, m)
        if not m.available and opts.metrics_url:  # asked for by name: its absence is a gap, not silence
            facts.gaps.append(InputGap(opts.metrics_url, f"the /metrics scrape failed: {m.reason}"))
    if facts.host and facts.host.processes and facts.host.processes[0].config is not None:
        cfg = facts.host.processes[0].config  # what the running engine was really given
        facts.deployment = cfg.merge(facts.deployment) if facts.deployment else cfg
    if opts.probe_load and base and "perf" in opts.layers:
        from llm_doctor.collect import load_probe

        say("perf", f"probing throughput at concurrency 1 and {opts.probe_load}")
        probe = guarded(facts, "load probe", lambda: load_probe.probe(base, key, settings.model.value, opts.probe_load, deadline))
        if probe is not None and facts.host is not None:
            facts.host.probe = probe
