"""What a log says about the setup: engine and version, GPUs, KV cache capacity, weight memory,
CUDA graphs, llama.cpp context size. Each pattern is an engine's own start-up wording; the first
value of a run wins for totals, the last for capacities (several ranks print the same line).
The engine arguments themselves are parsed by doctor.engine_args from the lines kept here.
"""

from __future__ import annotations

import re

from llm_doctor.logparse import prefilter
from llm_doctor.logparse.events import to_number

# (field, pattern): the named group "v" (and "v2") are the value
_SETUP: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("gpu_blocks", re.compile(r"# (?:GPU|cuda|rocm|xpu) blocks: (?P<v>[\d,]+)(?:, # CPU blocks: (?P<cpu_blocks>[\d,]+))?", re.I)),
    ("gpu_blocks", re.compile(r"num_gpu_blocks(?: is)?[:=]\s*(?P<v>\d+)")),
    ("kv_cache_tokens", re.compile(r"GPU KV cache size: (?P<v>[\d,]+) tokens")),
    ("kv_cache_tokens", re.compile(r"KV Cache is allocated\. #tokens: (?P<v>\d+)")),
    ("kv_cache_tokens", re.compile(r"max_total_num_tokens=(?P<v>\d+)")),
    ("available_kv_gib", re.compile(r"Available KV cache memory: (?P<v>[\d.]+) GiB")),
    ("available_kv_gib", re.compile(r"KV Cache=(?P<v>[\d.]+)\s*GiB|the rest of the memory reserved for KV Cache is (?P<v2>[\d.]+)\s*GiB")),
    # vLLM's memory profile (worker.py v0.6.3-v0.6.6 "... gpu_memory_utilization=0.90", v0.7+ "total_gpu_memory (8.00GiB)
    # x gpu_memory_utilization (0.70) = 5.60GiB"): the share it ran with, whatever its arguments were printed as
    ("memory_share", re.compile(r"x gpu_memory_utilization \((?P<v>[\d.]+)\) =|kv_cache_size=-?[\d.]+GiB,? gpu_memory_utilization=(?P<v2>[\d.]+)")),
    ("weights_gib", re.compile(r"(?:Loading model weights|Model loading) took (?P<v>[\d.]+) ?Gi?B")),
    ("weights_gib", re.compile(r"Load weight end\..*?mem usage=(?P<v>[\d.]+) GB")),
    ("weights_gib", re.compile(r"model weights took (?P<v>[\d.]+)\s*GiB")),
    # vllm/model_executor/model_loader/weight_utils.py (v0.11+, before it picks a safetensors load strategy):
    # "Filesystem type for checkpoints: %s. Checkpoint size: %.2f GiB. Available RAM: %.2f GiB."
    ("checkpoint_gib", re.compile(r"Checkpoint size: (?P<v>[\d.]+) GiB\.? Available RAM: (?P<available_ram_gib>[\d.]+) GiB")),
    ("max_concurrency", re.compile(r"Maximum concurrency for (?P<len>[\d,]+) tokens per request: (?P<v>[\d.]+)x")),
    ("gpu_total_gib", re.compile(r"total capac\w* of (?P<v>[\d.]+) GiB")),
    ("gpu_total_gib", re.compile(r"total_gpu_memory \((?P<v>[\d.]+)\s*GiB\)|total_gpu_memory=(?P<v2>[\d.]+)\s*GiB")),
    ("free_at_start_gib", re.compile(r"Free memory on device (?:\S+ )?\((?P<v>[\d.]+)/(?P<total>[\d.]+) GiB\)")),
    ("compute_capability", re.compile(r"compute capability(?: of)?:? (?P<v>\d+\.\d+)", re.I)),
    ("gpu_name", re.compile(r"^GPU (?P<idx>\d+): (?P<v>(?:NVIDIA |Tesla |AMD |Quadro )?[\w .-]+?)(?: \(UUID.*)?$")),
    ("gpu_name", re.compile(r"Device \d+: (?P<v>(?:NVIDIA |AMD |Tesla )?[\w .-]+?), (?:gfx\w+|compute capability)")),
    ("gpu_name", re.compile(r"Your (?P<v>(?:NVIDIA )?[\w .-]+?) GPU has compute capability")),
    ("gpu_name", re.compile(r"GPU models and configuration: GPU 0: (?P<v>[\w .-]+?)(?: \(UUID.*)?$")),
    ("gpu_count", re.compile(r"ggml_cuda_init: found (?P<v>\d+) (?:CUDA|ROCm) devices")),
    # Ollama's discovery result (discover/types.go LogDetails, v0.3-v0.12: msg="inference compute" id=GPU-... library=cuda ...),
    # one line per GPU it will use: it found one, whatever library it tried before
    ("gpu_found", re.compile(r"msg=\W?inference compute\W? id=\S+ library=(?:cuda|rocm)\b")),
    ("visible_devices", re.compile(r"CUDA_VISIBLE_DEVICES=(?P<v>[\d,]+)")),
    # the machine is AMD's (ROCm/HIP): vLLM's platform detection (vllm/platforms/__init__.py "Automatically detected platform
    # rocm."), the environment reports of SGLang/LMDeploy check_env ("ROCM available: True", "HIPCC: HIP version: 6.3...") and
    # torch's collect_env ("ROCM used to build PyTorch: 6.3...", N/A on a CUDA build), a ROCm torch's version (+rocm6.3)
    ("rocm", re.compile(r"Automatically detected platform rocm\b|\bis_rocm:? True\b|\bROCM available: True\b|"
                        r"ROCM used to build PyTorch: \d|\bHIP version: \d|\btorch\S*\+rocm\d|PyTorch: \S+\+rocm\d")),
    ("smi_used_mib", re.compile(r"\|\s+(?P<v>\d+)MiB /\s+(?P<total>\d+)MiB \|")),
    ("smi_process", re.compile(r"^\|\s+(?P<gpu>\d+)\s+(?:N/A\s+N/A\s+)?(?P<pid>\d+)\s+[CG]\S*\s+\S.*?\s(?P<v>\d+)MiB\s*\|")),
    # the base URL a client was configured with (YAML/JSON/env/CLI/log spellings)
    (
        "base_url",
        re.compile(
            r"\b(?:base[_ ]?url|api_base|base-url|baseURL|OPENAI_(?:API_)?BASE(?:_URL)?|ANTHROPIC_BASE_URL|api_url|endpoint)\b[\"']?\s*[:=]\s*[\"']?"
            r"(?P<v>https?://[^\s'\"`,)\]}]+)",
            re.I,
        ),
    ),
    # the proxy or gateway a text names (first named wins): whose setting holds a buffered stream back
    (
        "proxy",
        re.compile(
            r"(?P<v>nginx\.ingress\.kubernetes\.io|ingress-nginx|nginx[- ]ingress|\bnginx\b|\bOpenResty\b|\bCloudflare\b|\bcloudflared\b|"
            r"\bCaddy\b|\bTraefik\b|\bEnvoy\b|\bHAProxy\b|\bmod_proxy\b|\bAPI Gateway\b|\bLiteLLM\b)",
            re.I,
        ),
    ),
    ("sse_done", re.compile(r"^data: \[DONE\]")),
    ("sse_chunks", re.compile(r"^data: \{.*\"choices\"")),
    # a streamed answer being read: a chunk object quoted (OpenAI API "chat.completion.chunk"), or the frame of a stream
    # reader (the Mistral JS client's chatStream, eventsource-parser's parseEventStreamLine, openai-python's Stream, a WHATWG
    # stream's reader.read()), or a request that asked for one (`"stream": true` in a body, `stream=True` in Python,
    # `stream: true` in JavaScript)
    ("stream_read", re.compile(r"[\"']object[\"']\s*:\s*[\"']chat\.completion\.chunk|\bchatStream\b|\bparseEventStreamLine\b|"
                               r"eventsource-parser|openai/_streaming\.py|\biter_lines\b|\b_iter_events\b|\breader\.read\(\)|"
                               r"\"stream\": ?true\b|'stream': ?true\b|\bstream ?= ?True\b|\bstream: true\b")),
    ("cuda_graphs", re.compile(r"Graph capturing finished|Capture cuda graph end|Capturing CUDA graph shapes: 100%")),
    ("n_ctx", re.compile(r"(?:llama_new_context_with_model|llama_context): n_ctx\s*=\s*(?P<v>\d+)")),
    ("n_ctx_train", re.compile(r"n_ctx_train\s*=\s*(?P<v>\d+)")),
    ("n_ctx_train", re.compile(r"\.context_length u32\s*=\s*(?P<v>\d+)")),
    ("model", re.compile(r"llama_model_loader: loaded meta data with .* from (?P<v>\S+)")),
    ("model", re.compile(r"general\.name str\s*=\s*(?P<v>.+)$")),
    ("engine_version", re.compile(r"^(?:build|version): (?P<v>\d+ \(\w+\))")),
    ("engine_version", re.compile(r"\bsglang(?:==| version:? )v?(?P<v>\d+\.\d+[\w.]*)")),
    ("engine_version", re.compile(r"\[pip3?\] vllm==(?P<v>\d[\w.+]*)|vLLM Version: (?P<v2>\d[\w.+]*)")),
    ("engine_version", re.compile(r'text_generation_launcher: .*version: "?(?P<v>\d+\.\d+\.\d+)')),
    ("engine_version", re.compile(r'msg="starting llama server".*|ollama version is (?P<v>\d[\w.]*)|version=(?P<v2>\d+\.\d+\.\d+)')),
    # the OpenAI API a client calls, where its code or settings name the Responses API: the SDKs' client.responses.create /
    # .stream / .parse (openai-python resources/responses/responses.py and openai-node resources/responses post to
    # /responses), LangChain's ChatOpenAI(use_responses_api=True), Codex's provider setting wire_api = "responses"
    # (codex-rs/core/src/model_provider_info.rs): a 404 that names no path was asked of /v1/responses
    ("wire_api", re.compile(r"\.(?P<v>responses)\.(?:create|stream|parse)\(|\buse_(?P<v2>responses)_api\s*=\s*True\b|"
                            r"\bwire_api\s*=\s*[\"'](?P<v3>responses)[\"']")),
    # the proxy the environment gives every HTTP client that reads it (requests/httpx trust_env, undici's
    # EnvHttpProxyAgent, curl, Go's ProxyFromEnvironment), as an env listing, a docker-compose environment or an export
    # states it, and the hosts NO_PROXY exempts from it
    ("proxy_env", re.compile(r"\b(?:HTTPS|https|ALL|all|HTTP|http)_(?:PROXY|proxy)\b[\"']?\s*[:=]\s*[\"']?"
                             r"(?P<v>(?:https?|socks5h?|socks4a?)://[^\s'\"`,]+)")),
    ("no_proxy", re.compile(r"\b(?:NO_PROXY|no_proxy)\b[\"']?\s*[:=]\s*[\"']?(?P<v>[^\s'\"`]+)")),
    # the proxy variables named at all (read, cleared, printed: `os.environ['no_proxy']`, `set http_proxy=`), or a request
    # said to go through a forward proxy: the client is sent through one, whatever its URL
    ("proxy_named", re.compile(r"\b(?:https?|all|no)_proxy\b|\b(?:behind|through|via) (?:a|an|the) (?:(?:HTTPS?|SOCKS5?|corporate|system) )?proxy\b",
                               re.I)),
    # a URL on this machine's loopback (or the listen-all address, which a client on the same host reaches the same way)
    # host.docker.internal given to a container by hand (`--add-host=host.docker.internal:host-gateway`, compose extra_hosts):
    # Docker Engine on Linux resolves the name only then (Docker Desktop does on its own)
    ("docker_host_mapped", re.compile(r"host\.docker\.internal\W{0,3}[:=]\W{0,3}(?:host-gateway|\d+\.\d+\.\d+\.\d+)|\bextra_hosts\b", re.I)),
    ("loopback_url", re.compile(r"https?://(?:localhost|127\.\d+\.\d+\.\d+|\[::1\]|0\.0\.0\.0)[:/]", re.I)),
)

ARGS = re.compile(
    r"non-default args: \{|args: Namespace\(|LLM engine(?: \([^)]*\))? with config:|server_args=ServerArgs\(|"
    r"text_generation_launcher: Args \{|vLLM API server version|Initializing an? (?:V[01] )?LLM engine"
)
STARTS = re.compile(
    r"vLLM API server version|Initializing an? (?:V[01] )?LLM engine|non-default args: \{|args: Namespace\(|"
    r"server_args=ServerArgs\(|text_generation_launcher: Args \{|^(?:main: )?build: \d+|llama server listening|"
    r"msg=\"starting llama server\"|Starting vLLM API server|Launching server|Started server process"
)

# an engine's command line quoted in the log (a shell prompt, a Dockerfile CMD, a k8s args list
# flattened, `ps` output); doctor.engine_args.parse_command reads it. A command may follow a colon or a
# CJK sentence with no space between ("服务启动命令lmdeploy serve api_server ...", "启动命令：vllm serve ...")
COMMAND = re.compile(
    r"(?:^|[\s$#>`'\"(:]|[^\x00-\x7f])(?P<cmd>(?:vllm serve|sglang serve|trtllm-serve|text-generation-launcher|lmdeploy serve api_server|"
    r"python3? -m (?:vllm\.entrypoints\.openai\.api_server|sglang\.launch_server|lmdeploy\.serve\.openai\.api_server)"
    # llama.cpp's binaries, run from their build folder (./build/bin/llama-cli, .\Release\main.exe -m ...)
    r"|(?:[\w.~/\\-]*[/\\])?(?:llama-server|llama-cli|main(?:\.exe)?(?=\s+-m\s)))\s.*)"
)
# GPUStack's worker logs the argv it runs without the binary (gpustack/worker/backends/vllm.py VLLMServer.start:
# `logger.debug(f"Run vllm with arguments: {' '.join(arguments)}")`, arguments = ["serve", model_path, ...])
GPUSTACK_COMMAND = re.compile(r"\bRun (?P<engine>vllm) with arguments: (?P<args>serve\s.*)")


def command(text: str) -> str | None:
    """The engine command line a log line quotes (COMMAND's `cmd`, or GPUStack's argv with its engine's name
    put back in front), or None."""
    if m := COMMAND.search(text):
        return m.group("cmd")
    if m := GPUSTACK_COMMAND.search(text):
        return f"{m['engine']} {m['args']}"
    return None



def command_engine(command: str) -> str:
    """The engine a launch command (COMMAND's `cmd`) starts: the ENGINE_MARKERS entry that matches earliest in it
    (`python -m sglang.launch_server --model-path ...vllm...` is SGLang's), or ""."""
    found = [(m.start(), engine) for engine, marker in ENGINE_MARKERS if engine != "client" and (m := marker.search(command))]
    return min(found)[1] if found else ""


# a frame inside an installed client library (the 0.x SDK's openai/api_requestor.py; either path separator): what raised
# there was called by a client. An engine's own openai package (vllm/entrypoints/openai/) is no match.
CLIENT_FRAME = re.compile(r"(?:site|dist)-packages[/\\](?:openai|anthropic|httpx|httpcore|requests|aiohttp|urllib3|litellm|langchain\w*|llama_index)[/\\]")
ENGINE_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("vllm", re.compile(r"vllm|VllmWorker|EngineCore|APIServer pid|LLM engine|RayWorkerWrapper|non-default args", re.I)),
    ("sglang", re.compile(r"sglang|ServerArgs|ModelTpServer|TpModelWorker|Scheduler hit an exception|Received sigquit", re.I)),
    ("llamacpp", re.compile(r"llama_model_load|llm_load_|llama_new_context|ggml_|llama_kv_cache|load_tensors:|llama_context:|\bslot \w+:|llama-server|ik_llama")),
    # TGI's launcher, its Python shards, its router (backends/v3, router/src) and its container image
    ("tgi", re.compile(r"text_generation_launcher|text_generation_server|text_generation_router|ShardCannotStart|"
                       r"text-generation-launcher|text-generation-inference")),
    ("ollama", re.compile(r"ollama|source=\w+\.go:\d+|\[GIN\]|llama runner", re.I)),  # "llama runner": Ollama's name for its llama.cpp process
    # TensorRT-LLM's logger, its CLIs, TensorRT's own "[TRT] [E]" lines and the Triton backend's in-flight batcher
    ("trtllm", re.compile(r"tensorrt_llm|\[TRT-LLM\]|TensorRT-LLM|trtllm-(?:serve|build)|\[TRT\] \[[EWIV]\]|inflight_batcher_llm|"
                          r"tensorrtllm_backend", re.I)),
    # LMDeploy: its logger name, TurboMind (its C++ engine) and TurboMind's "[TM][ERROR]" prefix
    ("lmdeploy", re.compile(r"lmdeploy|turbomind|\[TM\]\[", re.I)),
    (
        "client",
        re.compile(
            r"openai\.|httpx|httpcore|APIConnectionError|requests\.exceptions|APIStatusError|aiohttp|"
            r"litellm|anthropic\.|OpenAIError|"
            # the words of client tools and HTTP clients (never an engine's server log): Claude Code's "API Error: 400",
            # openai/anthropic SDKs' "Error code: 400 - {body}", Cline's "API Request Failed", node's fetch/axios, curl
            r"\bAPI Error\b|\bError code: \d{3}\b|API Request Failed|FetchError|AxiosError|\bfetch failed\b|\bundici\b|"
            r"node-fetch|\bcurl: \(\d+\)|langchain|\bCline\b|Claude Code|open-webui|"
            # the Vercel AI SDK's error names, go-openai's APIError, Spring AI's, LlamaIndex's
            r"\bAI_\w+Error\b|\bAPICallError\b|\berror, status code: \d{3}\b|TransientAiException|llama_index|"
            # a JavaScript runtime's stack (no engine this tool reads runs on node: what threw is a client, a client tool
            # or a web UI), a client library's own frames, curl's refusal of a non-HTTP answer (lib/http.c)
            r"node:internal/|\bNode\.js v\d|webpack-internal:|\bat JSON\.parse\b|"
            + CLIENT_FRAME.pattern + "|"
            r"Received HTTP/0\.9 when not allowed|"
            # botocore's ClientError (boto/botocore 1.20.0 `botocore/exceptions.py` MSG_TEMPLATE: "An error occurred
            # ({error_code}) when calling the {operation_name} operation: {error_message}"): an AWS API (Bedrock) answered
            r"\bAn error occurred \(\w+\) when calling the \w+ operation\b|"
            # google-api-core's GoogleAPICallError (googleapis/python-api-core v2.19.0 `google/api_core/exceptions.py`, __str__
            # "{code} {message}"): a Google API (Gemini, Vertex AI) answered with that status
            r"\bgoogle\.api_core\.exceptions\.\w+: [45]\d\d\b|"
            # the error object of an API's answer, as the client received it: OpenAI's and Anthropic's `"type": "..._error"`,
            # vLLM's and SGLang's `"object": "error"` (ErrorResponse), Google's canonical status names (google.rpc.Code)
            r"[\"']type[\"']\s*:\s*[\"']\w+_error[\"']|[\"']object[\"']\s*:\s*[\"']error[\"']|"
            r"[\"']status[\"']\s*:\s*[\"'](?:INVALID_ARGUMENT|FAILED_PRECONDITION|PERMISSION_DENIED|RESOURCE_EXHAUSTED|UNAUTHENTICATED|"
            r"NOT_FOUND|UNAVAILABLE|DEADLINE_EXCEEDED)[\"']", re.I
        ),
    ),
)
V1_MARKERS = re.compile(r"V1 LLM engine|EngineCore|vllm/v1/|\bv1/engine|VLLM_USE_V1=1")
V0_MARKERS = re.compile(r"V0 LLM engine|LLM engine \(v0\.[0-7]\.|llm_engine\.py|vllm/engine/llm_engine|VLLM_USE_V1=0")


# the literals one of which each pattern's matches contain (doctor.logparse.prefilter); None: no
# literal is required, the pattern is always tried
_GATES = [tuple(prefilter.literals([pattern])) or None for _, pattern in _SETUP]


def extract(text: str) -> list[tuple[str, object, dict[str, object]]]:
    """(field, value, other groups) for each setup fact this message states."""
    out: list[tuple[str, object, dict[str, object]]] = []
    low = text.lower()
    for (field, pattern), gate in zip(_SETUP, _GATES, strict=True):
        if gate is not None and not any(lit in low for lit in gate):
            continue
        m = pattern.search(text)
        if not m:
            continue
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        raw = groups.pop("v", None) or groups.pop("v2", None) or groups.pop("v3", None)
        if field in ("cuda_graphs", "sse_done", "sse_chunks", "stream_read", "gpu_found", "rocm", "proxy_named", "loopback_url", "docker_host_mapped"):
            out.append((field, True, {}))
            continue
        if raw is None:
            continue
        value = raw.strip() if field in ("gpu_name", "model", "engine_version", "visible_devices", "base_url", "no_proxy") else to_number(raw)
        out.append((field, value, {k: to_number(v) for k, v in groups.items()}))
    return out
