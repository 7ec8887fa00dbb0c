"""Load (and, through checks/access/stated.py, access) failures a person states in words.

doctor/logparse/failure_prose.py reads "transformers does not recognize this architecture", "32 heads
are not divisible by 5 GPUs", "the stream arrives all at once behind nginx" into facts.said. Such a
sentence is evidence of the tier "statement": it is reported, never an all-clear, but it ranks below
every finding a log line or a probe gives (doctor/report: a crash pasted in the same text comes
first, and a statement whose code a real finding already has is dropped). Where the doctor read a
failure of the same layer it could not place (`*.unrecognized_failure`), the person's words name its
cause, so the statement explains it. The finding carries the code's own severity (a failure named
is a failure), the sentence as evidence, and as the next step the command that shows the output
that would confirm it and compute the fix.
"""

from __future__ import annotations

from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.stated import FailureStatement
from llm_doctor.findings import STATEMENT, Finding, Fix, Outcome

MAX_QUOTED = 3

ENGINE_LOG = Fix("Pass the engine's own output from its start to the failure (its container's `docker logs`, saved to a file): "
                 "that log confirms the cause and gives the fix's values", "llm-doctor analyze engine.log")
PROBE = Fix("Probe the endpoint the client uses (base URL, key and model from the flags, the environment or the client's "
            "config): the transcript (DNS, TCP, TLS, HTTP status, body) confirms the cause", "llm-doctor run")

# code -> (what the sentence says, the fix that follows from the code's definition); ENGINE_LOG or PROBE comes after it
ABOUT: dict[str, tuple[str, Fix | None]] = {
    "load.engine_outdated": ("the engine or transformers is said to be too old for the model", Fix(
        "Upgrade the engine and transformers to releases that list the model's architecture (check the installed versions first)",
        "pip list 2>/dev/null | grep -iE '^(vllm|sglang|transformers|lmdeploy|tensorrt)'")),
    "load.remote_code": ("the model is said to need its own code (trust_remote_code)", Fix(
        "Allow the model's own code to run (and make sure the flag reaches the engine)", "--trust-remote-code")),
    "load.tp_invalid": ("the parallel layout is said not to divide the model", Fix(
        "Use a tensor parallel size that divides the attention and KV heads (and a GPU count it fits); show the model's head counts",
        "grep -E 'num_attention_heads|num_key_value_heads|vocab_size' config.json")),
    "load.weights_oom": ("the weights are said not to fit the GPU memory", Fix(
        "Split the weights over more GPUs or load a quantized checkpoint; show the memory per GPU",
        "nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv")),
    "load.runtime_oom": ("the engine is said to run out of GPU memory while serving", Fix(
        "Leave headroom for activations: lower the memory share or the batch (--gpu-memory-utilization, --max-num-seqs, --max-num-batched-tokens)")),
    "load.kv_cache_insufficient": ("the KV cache is said to be too small for the context length", Fix(
        "Lower --max-model-len to what the KV cache holds (the engine's log states the capacity), or give the cache more memory")),
    "load.no_kv_cache_memory": ("no memory is said to be left for the KV cache", None),
    "load.gpu_memory_occupied": ("GPU memory is said to be held by another process", Fix(
        "Find the processes holding GPU memory and stop them (or lower the engine's memory share)",
        "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv")),
    "load.cuda_mismatch": ("the driver, CUDA, torch or engine build are said not to match", Fix(
        "Show the driver, the CUDA torch was built for and the engine's build, and install matching ones",
        "nvidia-smi; python -c 'import torch; print(torch.__version__, torch.version.cuda)'")),
    "load.gpu_not_visible": ("the engine is said not to see the GPU", Fix(
        "Show the GPUs the container or process sees (NVIDIA container runtime, --gpus, CUDA_VISIBLE_DEVICES)",
        "nvidia-smi -L; echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES")),
    "load.shm_insufficient": ("shared memory (/dev/shm) is said to be too small", Fix(
        "Give the container more shared memory (docker --shm-size, or a memory-backed /dev/shm volume); show what it has", "df -h /dev/shm")),
    "load.host_oom": ("the process is said to be killed for host memory", Fix(
        "Show the kernel's OOM kills and the memory limit of the container", "dmesg -T | grep -iE 'killed process|out of memory'")),
    "load.nccl_failed": ("NCCL is said to fail", Fix("Rerun with NCCL's own diagnostics and pass that log", "NCCL_DEBUG=INFO")),
    "load.gpu_fault": ("a GPU hardware or driver fault is said to occur", Fix("Show the driver's Xid messages", "dmesg -T | grep -i xid")),
    "load.startup_timeout": ("the model is said not to finish loading before something gives up", Fix(
        "Give the start-up the time the load takes (the probe's initial delay, the launcher's timeout)")),
    "load.model_files": ("the model's files are said to be missing, gated or at a wrong path", Fix(
        "Check the model path the engine is given holds config.json and the weights; for a gated repository, log in with an "
        "account that was granted access", "huggingface-cli whoami")),
    "load.config_invalid": ("the engine's arguments are said to be invalid", Fix(
        "Compare the arguments with those the installed engine accepts (its --help)")),
    "load.dtype_unsupported": ("the dtype is said to be unsupported on this GPU", Fix("Use a dtype the GPU supports", "--dtype float16")),
    "load.quantization_unsupported": ("the quantization is said to be unsupported by the engine or GPU", None),
    "access.key_malformed": ("the API key is said to carry quotes, whitespace or a doubled Bearer", Fix(
        "Strip the quotes and whitespace around the key where it is read (the .env line, the shell export)")),
    "access.key_missing": ("no API key is said to be set", Fix("Set the key where the client reads it (its flag, its environment variable "
                                                               "such as OPENAI_API_KEY, or its config file)")),
    "access.key_rejected": ("the server is said to reject the key (401/403)", None),
    "access.quota_exceeded": ("the provider is said to refuse for quota or billing", None),
    "access.rate_limited": ("the provider is said to rate-limit the requests (429)", None),
    "access.tls_failed": ("TLS or certificate verification is said to fail", Fix(
        "Show the certificate chain the server presents (openssl s_client -connect on its host and port); trust a private CA "
        "through the client's CA bundle (SSL_CERT_FILE, REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS) rather than turning verification off")),
    "access.streaming_broken": ("streaming is said to stall, arrive buffered or be malformed", Fix(
        "Behind a reverse proxy, turn off its buffering for the stream (nginx: `proxy_buffering off;`, or the header "
        "`X-Accel-Buffering: no`); compare with a stream straight from the server", "proxy_buffering off;")),
    "access.proxy_failed": ("the HTTP(S) proxy is said to get in the way", Fix(
        "Show the proxy settings the client inherits; exempt the server's host with NO_PROXY", "env | grep -i _proxy")),
    "access.dns_failed": ("the host name is said not to resolve", Fix(
        "Resolve the host as the client does, from where it runs (a container resolves its own names: host.docker.internal, service names)")),
    "access.connect_failed": ("the connection to the server is said to be refused or to fail", Fix(
        "Check that the server listens where the client points (host, port, container network: localhost inside a container is the container)")),
    "access.model_not_found": ("the model ID is said not to be served", Fix(
        "Use an ID the server lists at its /v1/models (vLLM serves --served-model-name, Ollama the pulled tag)")),
    "access.model_id_missing": ("no model ID is said to be configured", None),
    "access.base_url_invalid": ("the base URL is said to be wrong", Fix(
        "Give the base URL up to its /v1 (no doubled /v1, no /chat/completions pasted in)")),
    "access.protocol_mismatch": ("an OpenAI-style client and an Anthropic-style endpoint (or the reverse) are said to meet", None),
    "access.response_invalid": ("the server's answer is said to have the wrong shape", None),
    "access.server_error": ("the server or a gateway is said to answer 5xx", None),
    "access.timeout": ("requests are said to time out", None),
}
# a statement's cause before the symptom another statement names (quotes in the key cause its 401)
EXPLAINS = {"access.key_malformed": ["access.key_rejected"], "access.proxy_failed": ["access.connect_failed", "access.timeout"],
            "access.base_url_invalid": ["access.model_not_found"], "load.tp_invalid": ["load.config_invalid"]}


@check("load.stated", "load", codes=[c for c in ABOUT if c.startswith("load.")], needs=("said",))
def stated(facts: Facts) -> Outcome:
    """Every load failure a person states in words is reported, ranked below what the log shows."""
    return judge(facts, "load")


def judge(facts: Facts, layer: str) -> Outcome:
    """The statements of one layer's codes as findings of the tier "statement", in the order they are said."""
    by_code: dict[str, list[FailureStatement]] = {}
    for s in facts.said:
        if s.code.startswith(f"{layer}.") and s.code in ABOUT:
            by_code.setdefault(s.code, []).append(s)
    findings = []
    for code, said in by_code.items():
        what, fix = ABOUT[code]
        evidence = [f"{s.where}: {s.text}" for s in said[:MAX_QUOTED]]
        evidence.append("stated in words: no log line or probe output in the input shows it (evidence tier: statement)")
        fixes = ([fix] if fix else []) + [ENGINE_LOG if layer == "load" else PROBE]
        findings.append(Finding(code, f"{what} ({len(said)} statement{'s' if len(said) > 1 else ''})", evidence, fixes,
                                explains=[f"{layer}.unrecognized_failure", *EXPLAINS.get(code, [])], tier=STATEMENT))
    return Outcome(findings, f"{len(findings)} {layer} failure(s) stated in words" if findings else "no failure of this layer stated")
