"""Performance signals an engine log states by itself (no live GPU needed): the KV cache running
full (SGLang retracting decodes, vLLM preempting sequences), llama.cpp bound by the CPU (sampling slower
than the model, more threads than the host has; where its layers went is perf.gpu_offload's),
and CUDA graphs turned off (or captured only up to a ceiling the decode steps outgrow). Judged from log
events only, so an offline `analyze` gives them too."""

from __future__ import annotations

import re

from llm_doctor import fp8
from llm_doctor.checks.load import log_events as le
from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.checks.perf.latency import ITL_S
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView

# vLLM's start-up advice names the flag without setting it ("To run the model in eager mode, set
# 'enforce_eager=True' or use '--enforce-eager' in the CLI"), with or without its quotes
ADVICE = re.compile(r"eager mode, set|or use .?--enforce-eager.? in the CLI|consider (?:using|setting) .?(?:--enforce-eager|enforce_eager)", re.I)
# the flag spelled as a flag (--enforce-eager, --disable-cuda-graph) sets something only on a command line: a launch (an
# engine entry point or a runner), an argument line (it opens with a flag, or gives two or more), or a config the engine
# printed (enforce_eager=True). In a person's sentence ("try --enforce-eager", "--disable-cuda-graph is for debugging")
# the flag is named, not set: perf.stated judges the sentence, where a question, advice or a negation states nothing
FLAG_SPELLING = re.compile(r"--enforce[-_]eager|--disable[-_]cuda[-_]graph", re.I)
LAUNCH = re.compile(r"\b(?:vllm\s+serve|api_server|launch_server|sglang\.launch|text-generation-launcher|docker\s+run|python\d?(?:\.\d+)?\s+-m|"
                    r"lmdeploy\s+serve|trtllm-serve|VLLM_\w+=|CUDA_VISIBLE_DEVICES=)", re.I)
FLAGS = re.compile(r"(?<![\w-])--[a-z][\w-]+", re.I)


def sets_graphs_off(line: str) -> bool:
    """The line sets CUDA graphs off: an engine's own words or printed config, or the flag on a command line; not a
    sentence that names the flag (the `enforce_eager` event's line)."""
    if FLAG_SPELLING.search(line) is None:
        return True  # enforce_eager=True, "CUDA graph is turned off", "cuda graph is disabled": the engine's
    words = line.strip().strip("`$>#*- ")
    return bool(LAUNCH.search(line)) or words.startswith("--") or len(FLAGS.findall(line)) >= 2
SAMPLING_SHARE = 0.1
HEADROOM = 0.92  # the memory fraction a fix raises to at most (perf.kv_cache_metrics keeps the same bound)  # sampling above 10% of a token's time: the sampler, not the model, is the cost


@check("perf.engine_log", "perf", codes=["perf.kv_cache_pressure", "perf.low_gpu_util", "perf.cpu_bound", "perf.eager_mode"], events=["decode_retract", "preemption", "offload_layers", "threads", "sampling_time", "eval_time", "enforce_eager", "graph_capture_truncated", "graph_capture_decode"], any_of=("logs", "deployment"), running=True)
def engine_log(facts: Facts, log: LogView | None) -> Outcome:
    """The log shows no KV-cache thrashing, CPU-bound generation or disabled CUDA graphs (a launch command
    alone, no log: its CUDA graph flag)."""
    if log is None:
        found = [f for f in (_weights_offloaded(facts), _eager(facts, None)) if f]
        return Outcome(found, "" if found else "the launch command keeps CUDA graphs on")
    findings = [f for f in (_kv_pressure(facts, log), _weights_offloaded(facts), _cpu_bound(facts, log),
                            _eager(facts, log) or _capture_ceiling(facts, log) or _decode_graph_gap(facts, log)) if f]
    return Outcome(findings, "" if findings else "no performance signal in the log")


def _kv_pressure(facts: Facts, log: LogView) -> Finding | None:
    found = log.events("decode_retract", "preemption")
    if not found:
        return None
    total = sum(e.count for e in found)
    # "Decode out of memory happened ... #retracted_reqs" is SGLang's own line, whatever else the paste holds; a
    # catalogue template is its engine's own wording
    engine = le.engine(facts) or next((t for e in found if (t := le.template_engine(e))), "") or (
        "sglang" if any(e.kind == "decode_retract" for e in found) else "vllm")
    cfg = fv.maybe_deployment(facts)
    fixes = []
    if engine == "llamacpp":
        # llama-server's slots (--parallel) share one --ctx-size of KV cells: more cells, or fewer slots sharing them
        n_ctx = (cfg.max_model_len if cfg is not None else None) or (facts.logs.setup.n_ctx if facts.logs else None)
        fixes.append(Fix("Give the slots more KV cache: raise the context size (every --parallel slot shares it), or run fewer slots",
                         f"-c {2 * n_ctx}" if n_ctx else None))
    # the engine's own cap (given or its default), halved: the running sequences then fit the cache they overran
    if cfg is not None and cfg.max_num_seqs and cfg.max_num_seqs > 1:
        fixes.append(Fix(f"Admit fewer sequences at once (now {cfg.max_num_seqs}), so the running ones fit the KV cache",
                         fv.command(engine, ("max_seqs", cfg.max_num_seqs // 2))))
    util = cfg.gpu_memory_utilization if cfg is not None else None
    if util is not None and util < HEADROOM:
        fixes.append(Fix(f"Give the KV cache more of the GPU (now {util:g})", fv.command(engine, ("mem", f"{min(HEADROOM, round(util + 0.05, 2)):.2f}"))))
    if (halve := fv.kv_half(engine)) and fp8.from_facts(facts) is not False and not (
        cfg is not None and cfg.kv_cache_dtype.startswith(("fp8", "q8", "q4"))
    ):
        fixes.append(Fix(f"{'Or h' if fixes else 'H'}alve the KV cache per token with an 8-bit cache", halve))
    if not fixes:
        fixes.append(Fix("More KV cache per request: fewer concurrent sequences, more GPU memory for the cache, or more GPUs (TP)"))
    what = "a batch found no free KV cells" if engine == "llamacpp" else "requests were retracted/preempted"
    return Finding("perf.kv_cache_pressure", f"the KV cache runs full: {what} {total} times",
                   le.evidence(found) + [f"{total} {'full-cache retries' if engine == 'llamacpp' else 'retractions/preemptions'} in the log"], fixes)


def _weights_offloaded(facts: Facts) -> Finding | None:
    """vLLM told to keep part of each GPU's weights in host memory: --cpu-offload-gb N "requires fast CPU-GPU
    interconnect, as part of the model is loaded from CPU memory to GPU memory on the fly in each model forward
    pass" (vllm/engine/arg_utils.py), so every decode step waits for N GiB to cross PCIe. It pays only where the
    weights do not fit the GPUs otherwise."""
    cfg = fv.maybe_deployment(facts)
    if cfg is None or cfg.engine != "vllm" or not cfg.cpu_offload_gb or not cfg.is_set("cpu_offload_gb"):
        return None
    gib = cfg.cpu_offload_gb
    said = [f"{s.where}: {s.text}" for s in facts.stated if "cpu_offload_gb" in s.measures][:1]
    evidence = said or [f"cpu_offload_gb={gib:g} ({cfg.sources.get('cpu_offload_gb', '?')})"]
    evidence.append(f"{gib:g} GiB of each GPU's weights are copied from host memory in every forward pass: each decode step waits on PCIe")
    tp = cfg.tensor_parallel_size if cfg.is_set("tensor_parallel_size") else None
    wider = (Fix(f"Where they do not fit, spread them over more GPUs instead of offloading (TP {tp * 2}), or quantize",
                 fv.command(cfg.engine, ("tp", tp * 2))) if tp
             else Fix("Where they do not fit, spread them over more GPUs (tensor parallelism) or quantize instead of offloading"))
    return Finding("perf.low_gpu_util", f"cpu_offload_gb={gib:g}: part of the weights stream over PCIe every step, the GPUs wait",
                   evidence,
                   [Fix("Drop the offload where the weights fit the GPUs (a setting kept from a smaller machine costs the most)",
                        "--cpu-offload-gb 0"), wider],
                   explains=["perf.high_latency", "perf.cpu_bound"])


def _cpu_bound(facts: Facts, log: LogView) -> Finding | None:
    threads = [e for e in log.events("threads") if int(e.values.get("threads", 0)) > int(e.values.get("hw_threads", 1 << 30))]  # type: ignore[call-overload]
    if threads:
        v = threads[0].values
        return Finding("perf.cpu_bound", f"{v['threads']} threads on {v['hw_threads']} hardware threads: the CPU thrashes",
                       le.evidence(threads[:1]), [Fix("Use about the number of physical cores", f"-t {max(1, int(v['hw_threads']) // 2)}")])  # type: ignore[call-overload]
    smt = _threads_over_cores(log)
    if smt is not None:
        return smt
    sampling, evals = log.events("sampling_time"), log.events("eval_time")
    for s, e in zip(sampling, evals, strict=False):
        sm, em = float(s.values["ms_per_token"]), float(e.values["ms_per_token"])  # type: ignore[arg-type]
        if em and sm / em >= SAMPLING_SHARE:
            return Finding("perf.cpu_bound", f"sampling takes {sm:g} ms per token, {sm / em:.0%} of a token's {em:g} ms",
                           le.evidence([s, e]), [Fix("Use a cheaper sampler (drop mirostat / large top-k / DRY)", "--mirostat 0")])
    return None


# system_info's feature list (ggml's llama_print_system_info): an x86 build says AVX/SSE3, a build that computes on
# a GPU or a BLAS library says so (BLAS = 1 for cuBLAS/OpenBLAS/Accelerate in 2023, CUDA/Metal/Vulkan/ROCm later)
_X86 = re.compile(r"\b(?:AVX2?|SSE3) = 1\b")
_OFF_CPU = re.compile(r"\b(?:BLAS|CUBLAS|CLBLAST|METAL|VULKAN|SYCL|KOMPUTE) = 1\b|\b(?:CUDA|ROCm|HIP|Metal|Vulkan|SYCL|MUSA|CANN)\s?:", re.I)


def _threads_over_cores(log: LogView) -> Finding | None:
    """A CPU-only llama.cpp run on x86 given more threads than half the hardware threads: x86 desktops and servers
    run two hardware threads per core (hybrid Intel CPUs two per P-core, one per E-core), so past half of them the
    threads share cores. llama.cpp splits each matrix evenly across its threads and waits for the slowest, so a thread
    on a shared core or an E-core gates every token; its own default is one thread per physical (performance) core
    (common cpu_get_num_math). Judged only where the system_info line shows an x86 build that computes on the CPU,
    and no layer went to a GPU."""
    offloaded = any(int(e.values.get("offloaded", 0)) > 0 for e in log.events("offload_layers"))  # type: ignore[call-overload]
    for e in log.events("threads"):
        threads, hw = int(e.values.get("threads", 0)), int(e.values.get("hw_threads", 0))  # type: ignore[call-overload]
        line = e.lines[0] if e.lines else ""
        if offloaded or hw < 4 or threads <= hw // 2 or not _X86.search(line) or _OFF_CPU.search(line):
            continue
        cores = hw // 2
        return Finding("perf.cpu_bound", f"{threads} threads on {hw} hardware threads of a CPU-only run: threads share cores",
                       le.evidence([e]) + [f"an x86 core runs two of the {hw} hardware threads: past {cores} threads they share "
                                           "cores (or run on a hybrid Intel CPU's slower E-cores), and each token waits for the slowest"],
                       [Fix(f"Use at most {cores} threads, one per physical core; on a hybrid Intel CPU one per performance core "
                            "(llama.cpp's default when -t is left out)", f"-t {cores}")],
                       severity="warn", explains=["perf.high_latency"])
    return None


def _eager(facts: Facts, log: LogView | None) -> Finding | None:
    found = [e for e in log.events("enforce_eager") if not any(ADVICE.search(x) or not sets_graphs_off(x) for x in e.lines[:1])] if log else []
    set_by_config = facts.deployment is not None and facts.deployment.enforce_eager is True and facts.deployment.is_set("enforce_eager")
    if not found and not set_by_config:
        return _eager_batches(facts)
    # SGLang's flag is --disable-cuda-graph (engine_args reads it into enforce_eager)
    sglang = le.engine(facts) == "sglang" or any("disable_cuda_graph" in x or "disable-cuda-graph" in x for e in found for x in e.lines[:1])
    # TGI's is --cuda-graphs 0 (its default captures batch sizes 1,2,4,8,16,32)
    flag = "--disable-cuda-graph" if sglang else "--cuda-graphs 0" if le.engine(facts) == "tgi" else "--enforce-eager"
    evidence = le.evidence(found[:2]) or [f"{flag} is set"]
    # graphs save per-step launch overhead in decode: where the same input measures decode as fast, they cost
    # little here (a benchmark of a small model, a backend without CUDA) and it is a note, not the slowness
    m = facts.metrics if facts.metrics is not None and facts.metrics.available else None
    itl = m.values.get("itl_mean_s") if m is not None else None
    fast = itl is not None and 0 < itl < ITL_S
    if fast:
        evidence.append(f"measured decode: {itl * 1000:.1f} ms per output token ({m.raw.get('bench:itl_mean_s') or m.raw.get('itl') or 'from the log'})")  # type: ignore[union-attr]
    why = next((r for r in SGLANG_GRAPH_OFF for e in found for x in e.lines[:1] if r[0].search(x)), None)
    if why is not None:  # SGLang turned the graphs off itself, for a setting its warning names
        return Finding("perf.eager_mode", f"CUDA graphs are off ({why[1]}): decode is slower", evidence, [why[2]],
                       severity="info" if fast or why[3] else "warn")
    return Finding("perf.eager_mode", f"CUDA graphs are off ({flag.lstrip('-')}): decode is slower", evidence,
                   [Fix(f"Drop {flag} so the engine captures CUDA graphs (costs some memory and start-up time)")],
                   severity="info" if fast else "warn")


# sglang server_args.py (v0.4.6, v0.5.5) / arg_groups (v0.5.23) "Cuda graph is disabled because ...": the setting that turned
# the graphs off, what captures them again, and whether it is by design (a PD prefill server never decodes)
SGLANG_GRAPH_OFF = [
    (re.compile(r"Cuda graph is disabled because of using torch native attention backend", re.I), "torch_native attention",
     Fix("SGLang captures no CUDA graphs with the torch_native attention backend: use a GPU backend", "--attention-backend triton"), False),
    (re.compile(r"Cuda graph is disabled because of using torch Flex Attention backend", re.I), "flex_attention",
     Fix("SGLang captures no CUDA graphs with the Flex Attention backend: use a GPU backend", "--attention-backend triton"), False),
    (re.compile(r"Cuda graph is disabled because deepep_mode=.?normal", re.I), "--deepep-mode normal",
     Fix("DeepEP's normal mode has no CUDA graphs: auto uses low_latency (with graphs) for decode (with DP attention, which refuses auto in some versions, choose low_latency)", "--deepep-mode auto"), False),
    (re.compile(r"Cuda graph is disabled for prefill server", re.I), "a PD prefill server",
     Fix("A disaggregated prefill server runs without CUDA graphs by design (its decode server captures them): nothing to change"), True),
]


SPEC_TOKENS = re.compile(r"num_spec(?:ulative)?_tokens['\"]?\s?[:=]\s?(\d+)")


def _capture_ceiling(facts: Facts, log: LogView) -> Finding | None:
    """vLLM's "Truncating max_cudagraph_capture_size to N" (VllmConfig._set_cudagraph_sizes): graphs are captured
    for steps of at most N tokens, and a step with more runs without them. A decode step carries max_num_seqs x
    (1 + num_speculative_tokens) tokens at full load: where that is known and above N, decode at load runs eager
    (warn, with the ceiling that covers it on vLLM's capture lattice); where it is not known, the ceiling is said
    (info) with the product to compare it to."""
    found = log.events("graph_capture_truncated")
    if not found:
        return None
    ceiling = int(found[-1].values.get("size") or 0)  # (the last: the config the engine ran with)
    cfg = fv.maybe_deployment(facts)
    spec = SPEC_TOKENS.search(" ".join(f"{k}={v}" for k, v in cfg.extra.items())) if cfg is not None else None
    per_request = 1 + (int(spec.group(1)) if spec else 0)
    seqs = cfg.max_num_seqs if cfg is not None and cfg.is_set("max_num_seqs") else None
    evidence = le.evidence(found[-1:])
    if seqs is None:
        evidence.append(f"CUDA graphs cover steps of at most {ceiling} tokens: a decode batch of more than {ceiling // per_request} "
                        f"request(s) ({per_request} token(s) each) runs without them")
        return Finding("perf.eager_mode", f"CUDA graphs are captured only up to {ceiling} tokens per step", evidence,
                       [Fix("Capture up to the decode batch the server runs: max_num_seqs x (1 + num_speculative_tokens) tokens "
                            "(--max-cudagraph-capture-size; vLLM rounds it down to 1, 2, 4, a multiple of 8 below 256 or of 16 above)")],
                       severity="info", explains=["perf.high_latency"])
    need = seqs * per_request
    if need <= ceiling:
        return None
    evidence.append(f"a full decode step is {seqs} requests x {per_request} token(s) = {need} tokens, above the {ceiling} captured: "
                    "decode at that load runs without CUDA graphs")
    return Finding("perf.eager_mode", f"decode steps of {need} tokens exceed the {ceiling}-token CUDA graph capture ceiling",
                   evidence, [Fix(f"Capture CUDA graphs up to the {need}-token decode step (more graph memory and start-up time)",
                                  f"--max-cudagraph-capture-size {capture_size(need)}")], explains=["perf.high_latency"])


# capture sizes the user chose (--cudagraph-capture-sizes, before it --cuda-graph-sizes, -O '{"cudagraph_capture_sizes": [...]}',
# --max-cudagraph-capture-size): not the default lattice
CHOSEN_SIZES = re.compile(r"cuda[_-]?graph[_-](?:capture[_-])?sizes|max[_-]cudagraph[_-]capture[_-]size", re.I)


def _decode_graph_gap(facts: Facts, log: LogView) -> Finding | None:
    """vLLM V1 captures FULL graphs for decode batches ("Capturing CUDA graphs (decode, FULL)",
    GPUModelRunner.capture_model) only for the capture sizes of at most max_num_seqs x (1 +
    num_speculative_tokens) tokens. The default sizes are the lattice [1, 2, 4], multiples of 8 below 256, of 16
    above (up to twice that product, at most 512): a max_num_seqs whose decode step is off the lattice leaves the
    decode batches between the largest captured size and max_num_seqs without a full graph, at the load where
    decode matters most. Fix: the max_num_seqs whose step is on the lattice."""
    found = log.events("graph_capture_decode")
    cfg = fv.maybe_deployment(facts)
    if not found or cfg is None or not cfg.is_set("max_num_seqs") or not cfg.max_num_seqs:
        return None
    options = " ".join(f"{k}={v}" for k, v in cfg.extra.items())
    if CHOSEN_SIZES.search(options):
        return None
    spec = SPEC_TOKENS.search(options)
    per_request = 1 + (int(spec.group(1)) if spec else 0)
    seqs = cfg.max_num_seqs
    need = seqs * per_request
    if need > CEILING or capture_size(need) == need:
        return None
    covered = lattice_below(need)
    first = covered // per_request + 1
    above = capture_size(need)
    evidence = le.evidence(found[-1:]) + [
        f"max_num_seqs={seqs} ({cfg.sources.get('max_num_seqs', '?')}): full decode graphs are captured for the sizes up to "
        f"{need} token(s), and the largest on vLLM's capture lattice is {covered}: decode batches of {first}"
        f"{f'-{seqs}' if seqs > first else ''} request(s) run without a full CUDA graph"]
    fixes = [Fix(f"Set max_num_seqs to a size vLLM captures ({above // per_request}), so the fullest decode batch has its graph",
                 f"--max-num-seqs {above // per_request}")] if above % per_request == 0 else []
    fixes.append(Fix(f"{'Or c' if fixes else 'C'}apture the decode step itself: add {need} to the capture sizes",
                     f"--cudagraph-capture-sizes {' '.join(str(n) for n in _lattice_upto(covered))} {need}"))
    return Finding("perf.eager_mode", f"decode batches of {first}{f'-{seqs}' if seqs > first else ''} requests have no captured "
                   f"CUDA graph (max_num_seqs {seqs} is off vLLM's capture sizes)", evidence, fixes, explains=["perf.high_latency"])


CEILING = 512  # vLLM's default max_cudagraph_capture_size (above it "Truncating ..." says the ceiling: _capture_ceiling)


def lattice_below(tokens: int) -> int:
    """The largest size on vLLM's capture lattice that is at most `tokens`."""
    return max(n for n in _lattice_upto(tokens))


def _lattice_upto(tokens: int) -> list[int]:
    sizes = [n for n in (1, 2, 4) if n <= tokens]
    return sizes + [n for n in range(8, min(tokens, 255) + 1, 8)] + [n for n in range(256, tokens + 1, 16)]


def capture_size(tokens: int) -> int:
    """The smallest size on vLLM's capture lattice ([1, 2, 4], then multiples of 8 below 256, then of 16) that holds
    `tokens`: a ceiling off the lattice is truncated down to it, so the fix names one on it."""
    if tokens <= 4:
        return next(n for n in (1, 2, 4) if n >= tokens)
    step = 8 if tokens < 256 else 16
    return -(-tokens // step) * step


def _eager_batches(facts: Facts) -> Finding | None:
    """SGLang's decode stat line says per batch whether it ran a captured CUDA graph ("cuda graph: False",
    srt/managers/scheduler_metrics_mixin.py): with graphs on, a batch larger than --cuda-graph-max-bs has no
    graph and decodes eager. Sustained over the decode lines, the running batch outgrew the captured sizes:
    capture up to the largest batch that ran eager."""
    from llm_doctor.logparse.stat_lines import is_sustained

    m = facts.metrics if facts.metrics is not None and facts.metrics.available and fv.from_log(m := facts.metrics) else None
    off = int(m.values.get("graph_off_samples", 0)) if m is not None else 0
    if m is None or not off:
        return None
    on = int(m.values.get("graph_on_samples", 0))
    if not is_sustained(off, off + on):
        return None
    batch = int(m.values.get("graph_off_running_max", 0))
    evidence = [m.raw.get("graph_off", "cuda graph: False"), f"{off} of {off + on} decode batches ran without a CUDA graph{fv.sampled(m)}"]
    fix = (Fix(f"Capture CUDA graphs up to the {batch} requests that decoded eager (more graph memory: lower "
               "--mem-fraction-static a little if the KV cache then does not fit)", f"--cuda-graph-max-bs {batch}") if batch
           else Fix("Capture CUDA graphs up to the running batch size (--cuda-graph-max-bs)"))
    return Finding("perf.eager_mode", f"{off} of {off + on} SGLang decode batches ran eager (cuda graph: False)"
                   + (f", up to {batch} running requests" if batch else ""), evidence, [fix])
