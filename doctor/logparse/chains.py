"""A failure read the way an engineer reads it: the error inside its wrappers, the first error
before its cascade, and the kind of failure its words name when no template knows the wording.

Three tables, all data:
- INNER: where a layer quotes the error it caught (an HTTP error's JSON body, `Caused by:`, Go's
  `cause:`, vLLM's "Worker failed with error '...'", a Rust error enum's string). The quoted text is
  read with the same rules (doctor.logparse.events) before the wrapper's own words, so the engine's
  CUDA error inside a gateway's 503 is the engine's finding, not a server error.
- WRAPPERS: the messages a layer prints *because* something below it failed ("Engine core
  initialization failed. See root cause above", "Received sigquit from a child process", NCCL's
  watchdog after the first collective failed). They are the cascade: never the root of a run.
- FAMILIES: when no template matches a failure line (the final exception of a traceback, an ERROR
  line, a crash), the keywords it is stated in name the cause's family ("out of memory", "NCCL",
  "certificate" ...) and the event kind whose check knows the fix. The families are tried in order
  and a cause's own context comes before the symptom words it shares with others ("Cannot allocate
  memory" from ibv_reg_mr is InfiniBand memory registration, i.e. NCCL, not host RAM).

Each event keeps how it was recognised in `values["tier"]` when it was not a plain template match
("template (inside ...)", "family: out of memory"); doctor.logview.evidence quotes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from llm_doctor.logparse import events as ev
from llm_doctor.logparse import families, prefilter


@dataclass(frozen=True)
class Pattern:
    """One entry of a table: its name, the regular expression and where the wording comes from."""

    name: str
    pattern: re.Pattern[str]
    kind: str = ""  # FAMILIES: the event kind the family means
    # lower-case literals one of which every match contains (doctor.logparse.prefilter)
    literals: tuple[str, ...] = ()


def _p(name: str, pattern: str, kind: str = "", flags: int = re.I) -> Pattern:
    compiled = re.compile(pattern, flags)
    return Pattern(name, compiled, kind, tuple(prefilter.literals([compiled])))


class Table:
    """Entries tried in order; a line is searched only with the entries one of whose literals it
    holds (each literal tested once per line, as doctor.logparse.events does for the rules)."""

    def __init__(self, *entries: Pattern) -> None:
        self.entries = entries
        self._always = frozenset(i for i, e in enumerate(entries) if not e.literals)
        lits = sorted({lit for e in entries for lit in e.literals})
        self._of = {lit: frozenset(i for i, e in enumerate(entries) if lit in e.literals) for lit in lits}

    def __iter__(self) -> Iterator[Pattern]:
        return iter(self.entries)

    def first(self, text: str) -> tuple[Pattern, re.Match[str]] | None:
        low = text.lower()
        tried = set(self._always)
        for lit, ids in self._of.items():
            if lit in low:
                tried |= ids
        for i in sorted(tried):
            m = self.entries[i].pattern.search(text)
            if m:
                return self.entries[i], m
        return None


# The error a wrapper quotes; group `inner` is read again with the rules.
INNER = Table(
    # Ollama llm/server.go (v0.1.32-v0.3): fmt.Errorf("timed out waiting for llama runner to start: %s", the runner's
    # last error), often itself inside an HTTP error body: the runner's error is the cause, the wait its symptom
    _p("Ollama runner start", r"timed out waiting for llama runner to start(?: - progress [\d.]+ -)?:\s*(?P<inner>[^\"\\]+)"),
    # vllm/v1/executor/multiproc_executor.py: RuntimeError(f"Worker failed with error '{e}', please check the stack trace above for the root cause")
    _p("vLLM worker", r"Worker failed with error '(?P<inner>.+)', please check"),
    # openai-python _exceptions.py / anthropic-sdk: f"Error code: {status} - {body}"; LiteLLM, gateways and
    # vLLM's own ErrorResponse put the engine's message in "message" (or FastAPI's "detail"); Ollama's and the gin servers'
    # {"error": "..."} holds it as a string; a body pasted from a JSON string (a client's own error text) has its quotes
    # escaped (`{\"error\":\"model \\\"x\\\" not found\"}`), unescaped by inner_message
    _p("HTTP error body", r"""\\*['"](?:message|detail|msg|error)\\*['"]\s*:\s*(?P<q>\\*['"])(?P<inner>.+?)(?<!\\)(?P=q)\s*[,}]"""),
    # Ollama llm/server.go: "llama runner process has terminated: <the runner's last error>", logged by the
    # scheduler as logfmt `error="..."` (Go's slog/logrus: msg="..." error="...")
    _p("Ollama runner", r"llama runner process has terminated: (?P<inner>[^\"]+)"),
    _p("Go error field", r"\berr(?:or)?=\"(?P<inner>(?:[^\"\\]|\\.)+)\""),
    # the message of a Go slog record (its head peeled by doctor.logparse.lines): read as a line of its own
    _p("Go slog message", r"^msg=\"(?P<inner>(?:[^\"\\]|\\.)+)\""),
    # Rust anyhow / Java / Python urllib3 ("(Caused by SSLError(...))"), Go's errors ("cause: ..."), undici's `[cause]:`
    _p("caused by", r"(?:\bCaused by\b:?|\[cause\]:|\bcause:)\s*(?P<inner>\S.*)"),
    # Ray: RayTaskError(OutOfMemoryError): ray::RayWorkerWrapper.execute_method() -- the worker's exception class
    _p("Ray task", r"RayTaskError\((?P<inner>\w+)\)"),
    # TGI launcher (router/src/lib.rs, launcher/src/main.rs): Error: Warmup(Generation("Not enough memory ..."))
    _p("error enum", r"^Error: \w+\((?:\w+\()*\"(?P<inner>[^\"]+)\""),
    # vLLM's _custom_ops.py / platforms (and SGLang's copy for custom_ar): logger.warning("Failed to import from %s with %r",
    # module, e): the ImportError's text says why the compiled extension did not load (the driver's libcuda missing from a
    # container given no GPU, a symbol of another torch), the wrapper only that it did not
    _p("extension import", r"Failed to import from [\w.]+ with ImportError\((?P<q>['\"])(?P<inner>.+?)(?P=q)\)"),
)

# the wrappers in which an engine says its model did not load: a client that prints one (Ollama's CLI quoting the
# server's 500) shows the engine's start-up failure, not its own
ENGINE_LOAD_WRAPPERS = ("llama.cpp loader", "Ollama runner", "Ollama model load")
# the wrappers that are a server's answer to a request: what they quote happened while serving
ANSWERED = ("HTTP error body",)
# the wrappers whose own words are a symptom (a wait that timed out): a cause they quote wins over them
SYMPTOM_WRAPPERS = ("Ollama runner start", "extension import")
# the wrappers that report a process's death, not an exception it raised: a kill (the OOM killer's SIGKILL, Ray's
# "Worker unexpectedly exits with a connection error code 2") is what they report, not another failure beside it
# (TGI's launcher reports its shard's end the same way: "Shard process was signaled to shutdown with signal 9", then
# "Shard 0 failed to start" and "Error: ShardCannotStart", launcher/src/main.rs; what the shard raised is its own event)
DEATHS = ("Ray actor death", "vLLM worker death", "vLLM engine core death", "TGI launcher")

# Messages printed because something else failed first: the cascade, never the root cause.
WRAPPERS = Table(
    # vllm/v1/engine/core.py: logger.exception("EngineCore failed to start.")
    _p("vLLM EngineCore", r"EngineCore failed to start"),
    # vllm/v1/engine/utils.py wait_for_engine_startup: RuntimeError("Engine core initialization failed. See root cause above. ...")
    _p("vLLM engine core", r"Engine core initialization failed\. See root cause above"),
    # vllm/v1/executor/multiproc_executor.py: "Worker failed with error '...', please check the stack trace above for the root cause"
    _p("vLLM worker", r"Worker failed with error .*please check the stack trace above"),
    # vllm/engine/multiprocessing/engine.py (V0 MQLLMEngine): RuntimeError("Engine process failed to start. See stack trace for the root cause.")
    _p("vLLM engine process", r"Engine process failed to start"),
    # vllm/v1/engine/core_client.py: "Got fatal signal from worker processes, shutting down. See stack trace above for root cause issue."
    _p("vLLM core client", r"fatal signal from worker processes|See stack trace above for root cause"),
    # vllm/v1/executor/multiproc_executor.py: "WorkerProc initialization failed due to an exception in a background
    # process. See stack trace for root cause." / "WorkerProc failed to start." / "Worker proc ... died unexpectedly"
    _p("vLLM worker process", r"WorkerProc (?:initialization failed|failed to start)"),
    # vllm/v1/executor/multiproc_executor.py monitor_workers: "Worker proc {name} died unexpectedly, shutting down executor."
    # when a worker's process sentinel fires: it exited without the exception a failing worker logs first
    _p("vLLM worker death", r"Worker proc \S+ died unexpectedly"),
    # vllm/v1/engine/core_client.py MPClient monitor: "Engine core proc {name} died unexpectedly, shutting down client."
    _p("vLLM engine core death", r"Engine core proc \S+ died unexpectedly"),
    # vllm/v1/engine/exceptions.py EngineDeadError: "EngineCore encountered an issue. See stack trace (above) for the root cause."
    # vllm/v1/engine/async_llm.py: logger.exception("AsyncLLM output_handler failed.") when the engine core died
    _p("vLLM engine dead", r"EngineDeadError|EngineCore encountered (?:an issue|a fatal error)|See stack trace \(above\) for the root cause|"
       r"AsyncLLM output_handler failed"),
    # sglang/srt/entrypoints/engine.py (sigquit_handler): "Received sigquit from a child process. It usually means the child failed."
    _p("SGLang launcher", r"Received sigquit from a child proce|It usually means the child failed"),
    # sglang/srt/entrypoints/engine.py _launch_subprocesses: "Rank 0 scheduler is dead. Please check if there are relevant logs."
    # engine.py _scheduler_died_error: "Rank 0 scheduler died during initialization (exit code: -3)" after the child's own
    # error; SIGBUS (-7) and SIGKILL (-9) are the cause themselves (a full /dev/shm, a kill)
    _p("SGLang scheduler", r"scheduler died during initialization \(exit code:? ?(?!-[79]\))-?\d|scheduler is dead|Initialization failed\. (?:warmup|detoken)|detokenizer_manager .*died"),
    # torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: the watchdog reports collectives that could not finish after one failed
    _p("NCCL watchdog", r"Watchdog caught collective operation timeout|ProcessGroupNCCL.*(?:Some NCCL operations have failed|"
       r"To avoid data inconsistency, we are taking the entire process down)|Process group watchdog thread terminated"),
    # NCCL's ncclRemoteError (src/init.cc ncclGetErrorString: "remote process exited or there was a network error"; torch's
    # ProcessGroupNCCL getNcclErrorDetailStr: "A call failed possibly due to a network error or a remote process exiting
    # prematurely"), NCCL's socket.cc "socketProgress: Connection closed by remote peer", gloo's tcp/pair.cc "Connection closed
    # by peer [addr]": the ranks that lost the peer whose own error (an OOM, an exception) stopped it first
    _p("NCCL peer gone", r"remote process exited or there was a network error|remote process exiting prematurely|"
       r"Connection closed by remote peer|Connection closed by peer \["),
    # kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go "Back-off restarting failed container", the pod's
    # "Reason: CrashLoopBackOff": the kubelet restarting a container whose own log says why it exited
    _p("Kubernetes restart", r"Back-off restarting failed container|\bCrashLoopBackOff\b"),
    # litellm/router.py RouterRateLimitError: "No deployments available for selected model, Try again in {} seconds. Passed
    # model={}. pre-call-checks={}, cooldown_list={}": the router cooled every deployment down after their own failures
    _p("LiteLLM router", r"No deployments available for selected model"),
    # ray/exceptions.py RayTaskError, ActorDiedError(cause=RayTaskError): the worker's own exception is printed with it
    _p("Ray actor", r"RayTaskError\(|The actor died because of an error raised in its creation task"),
    # ray/exceptions.py ActorDiedError(cause=ActorDiedErrorContext) "The actor died unexpectedly before finishing this task."
    # and WorkerCrashedError "The worker died unexpectedly while executing this task.": the process died without an
    # exception (a kill, a crash), and the raylet's exit detail follows (DEATHS)
    _p("Ray actor death", r"The (?:actor|worker) died unexpectedly (?:before finishing|while executing) this task|ActorDiedError|RayActorError"),
    # TGI launcher/src/main.rs: "Shard N failed to start" / Error: ShardCannotStart / "Shard complete standard error output"
    _p("TGI launcher", r"Shard \d+ failed to start|ShardCannotStart|Shard process was signaled to shutdown|WebserverFailed"),
    # llama.cpp tools/server: "failed to load model" after the loader's own error (the rule grammar's `echo` kind)
    _p("llama.cpp loader", r"^(?:\w+: )?(?:error: )?(?:failed|unable) to load model\b"),
    # Ollama llm/server.go: "llama runner process has terminated: <the runner's last error>"
    _p("Ollama runner", r"llama runner process has terminated|error starting the external llama server"),
    # Ollama llm/server.go (v0.9.6+ the runner stopped, v0.21.2 initModel's load request failed): the runner's own
    # error is in the server log, the answer only says a load failed ("Error: 500 Internal Server Error: ..." in the CLI)
    _p("Ollama model load", r"(?:model failed to load|model runner has unexpectedly stopped), this may be due to resource limitations"),
    # vllm/model_executor/models/registry.py _raise_for_unsupported: a listed architecture whose module failed to import in
    # the inspection subprocess ("... failed to be inspected. Please check the logs for more details."): the import error is the cause
    _p("vLLM model inspection", r"Model architectures? .{0,200}? failed to be inspected"),
    # transformers utils/import_utils.py _LazyModule._get_module: the import error follows on the next line
    _p("transformers lazy import", r"Failed to import transformers\.\S+ because of the following error \(look up to see its traceback\)"),
    # Python's multiprocessing / shells reporting a child's death
    _p("child exit", r"^Process (?:Process|SpawnProcess|ForkProcess)-\d+:$|exited with (?:exit )?code [1-9]|non-zero exit status"),
)

# Keyword families over a failure line no template matched (doctor/data/families.jsonl, loaded by
# doctor.logparse.families): name, words, the event kind it means, in the table's order.
FAMILIES = Table(*(_p(f.name, f.words, f.kind) for f in families.load()))

# When the log's milestones and frames do not place an out-of-memory (the tracker says "startup"), the
# words of the message do: what it was allocating for (PHASES of doctor.logparse.events).
PHASE_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # PyTorch's OOM message names memory "allocated in private pools (e.g., CUDA Graphs)" only when some is:
    # graphs were captured, so the weights had loaded (c10/cuda/CUDACachingAllocator.cpp)
    ("cuda_graph", re.compile(r"cuda ?graph|graph capture", re.I)),
    # a start-up warm-up wraps the error of the batch it ran (TGI's "Warmup(Generation(...))"): start-up, not serving
    ("profiling", re.compile(r"warm ?up|profil|dummy", re.I)),
    # Ollama's "an error was encountered while running the model" (llm/server.go) answers a request; the engine's
    # request loop wrapping the error (LMDeploy request.py "Engine loop failed with error", engine.py "Engine main loop
    # failed"): the loop runs once the engine is built, so its failure is a served step's
    # a scheduler's step failing ("Execution step failed: Alloc failed ...") is a served batch's
    ("serving", re.compile(r"\brequest|\bgenerat|\bdecod|\bsampl|\bforward\b|\brunning the model\b|engine (?:main )?loop failed|"
                           r"\b(?:execution |engine |batch )?step failed\b", re.I)),
    # TensorRT-LLM's C++ runtime: TensorRT deserializes the engine (its weights) with its own allocator, then
    # TllmRuntime allocates the execution context memory, and the runtime buffers and KV cache follow, through
    # the BufferManager (runtime/tllmRuntime.cpp `mEngineBuffer = mBufferManager.gpu(...)`; runtime/tllmBuffers.h
    # CudaAllocatorAsync: "cudaMallocAsync(ptr, n, mCudaStream->get())"): past the weights
    ("profiling", re.compile(r"cudaMallocAsync\(ptr, n, mCudaStream|tllmBuffers\.h", re.I)),
    # LMDeploy's TurboMind (v0.2-v0.7): LlamaWeight and LlamaDecoderLayerWeight allocate the weights with deviceMalloc
    # (src/turbomind/utils/memory_utils.cu, check_cuda_error on cudaMalloc); the KV blocks (BlockManager) and the batch
    # buffers (LlamaBatch) come later, through the allocator (src/turbomind/utils/allocator.h): the file an out-of-memory
    # names is the phase it came in (a Windows build prints the path with either slash)
    ("weights", re.compile(r"turbomind[/\\]utils[/\\]memory_utils\.cu", re.I)),
    ("profiling", re.compile(r"turbomind[/\\]utils[/\\]allocator\.h", re.I)),
    ("profiling", re.compile(r"prefill|\btokens\b|\bbatch|warm ?up|executor|KV ?cache|kv_cache|compute buffer|workspace|"
                             r"activation|cuBLAS", re.I)),
    ("weights", re.compile(r"\bweights?\b|load(?:ing)? (?:the )?model|checkpoint|safetensors|\btensors?\b|\blayers?\b", re.I)),
    # messages raised only while the weights are placed: TGI's launcher compares the model's weight files with the
    # free VRAM before any shard starts (launcher/src/main.rs "Not enough VRAM to run the model"); exllamav2's loader
    # fails placing the modules by their weight footprint (model.py set_device_map "Insufficient space in device
    # allocation") or loading them one by one in load_autosplit_gen ("Insufficient VRAM for model and cache")
    ("weights", re.compile(r"Not enough VRAM to run the model|Insufficient VRAM for model and cache|"
                           r"Insufficient space in device allocation", re.I)),
)

# A template's symptom word inside another cause's context: (the symptom's kind, the context, the owner kind).
# "Cannot allocate memory" is errno ENOMEM; from ibv_reg_mr / NET/IB it is InfiniBand's memlock limit (NCCL).
OWNERS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("host_oom", re.compile(r"\bibv_\w+|NET/IB|\bNCCL\b|InfiniBand|\bRDMA\b|\bmlx5_|ibvwrap", re.I), "nccl_error"),
    # a refused connection between the ranks of one job: torch.distributed's Gloo group (gloo/transport/tcp/pair.cc "connect
    # [127.0.1.1]:17308: Connection refused" under ProcessGroupGloo's "Gloo connectFullMesh failed with"), its TCPStore
    # rendezvous, NCCL's bootstrap: no client's server is down, the nodes cannot reach each other
    ("client_refused", re.compile(r"\bGloo\b|ProcessGroupGloo|\bNCCL\b|\bc10d\b|\bTCPStore\b|torch\.distributed|\brendezvous\b", re.I),
     "nccl_error"),
    # the kubelet quotes its HTTP probe's own client error (prober/http.go: "Readiness probe failed: Get ...: context
    # deadline exceeded (Client.Timeout exceeded while awaiting headers)"): the probe's verdict, not a client's timeout
    ("client_timeout", re.compile(r"\b(?:Readiness|Liveness|Startup) probe failed\b", re.I), "startup_timeout"),
    # NVML's "Driver/library version mismatch" (nvml.h NVML_ERROR_LIB_RM_VERSION_MISMATCH) behind the container runtime's
    # "initialization error": the GPU is there, the kernel module and the user-space driver differ (an upgrade without reboot)
    ("gpu_not_visible", re.compile(r"driver/library version mismatch", re.I), "cuda_mismatch"),
    # NCCL reports the CUDA call it made (include/checks.h CUDACHECK: "Cuda failure 'CUDA driver version is insufficient for CUDA
    # runtime version'", torch's "ncclUnhandledCudaError: Call to CUDA function failed"): the CUDA stack's mismatch, not NCCL's
    # "architecture" is the model's or the GPU's: said in a GPU kernel's context (TensorRT-LLM's "Assertion failed: Unsupported
    # architecture (.../kernels/contextFusedMultiHeadAttention/fmhaRunner.cpp)", an SM number, a compute capability) it is the
    # GPU's, below what the build's kernels were compiled for: no newer engine for the model, a build for this GPU
    ("arch_unsupported", re.compile(r"\bsm_?\d{2,3}\b|compute capability|/kernels?/|\bcutlass|\bfmha|\.cuh?\b|"
                                    r"\b(?:GPU|CUDA|SM) arch", re.I), "cuda_mismatch"),
    # vLLM's attention selector (platforms/cuda.py get_attn_backend_cls, vllm.jsonl) lists each backend's refusals: refused
    # for the dtype alone, no backend has kernels for the model's dtype, and another --dtype fixes it (not a backend setting)
    ("config_invalid", re.compile(r"^(?=.*No valid attention backend)(?=.*\bdtype not supported)"
                                  r"(?!.*(?:compute capability|head_size|kv_cache_dtype|block_size|MLA|sink|sparse|attention type|causal) not supported)",
                                  re.I), "dtype_unsupported"),
    # a JIT build that cannot start its tools: subprocess's FileNotFoundError names the program, not a model file (FlashInfer's
    # jit/cpp_ext.py run_ninja: subprocess.run(["ninja", ...]); torch/utils/cpp_extension.py runs ninja and nvcc the same way)
    ("model_missing", re.compile(r"No such file or directory: [\'\"`‘]?(?:ninja|nvcc|gcc|g\+\+|cc|c\+\+|clang\+?\+?|hipcc)(?=[\'\"`’\s]|$)", re.I),
     "cuda_mismatch"),
    ("nccl_error", re.compile(r"driver version is insufficient|no kernel image is available|forward compatibility was attempted|"
                              r"unsupported display driver", re.I), "cuda_mismatch"),
)
_OWNER_RULES = {owner: ev.Rule(owner, re.compile("(?!)"), True) for _, _, owner in OWNERS}


def phase_hint(text: str) -> str:
    """The phase an out-of-memory message names by what it was allocating for, or ""."""
    for phase, words in PHASE_WORDS:
        if words.search(text):
            return phase
    return ""


def phase(tracked: str, values: dict[str, object]) -> str:
    """The tracker's phase, unless it knows none ("startup") and the message's words name one."""
    return str(values.get("phase_hint") or tracked) if tracked == "startup" else tracked


def inner_message(text: str) -> tuple[str, str] | None:
    """The error a wrapper quotes inside this line, and the wrapper's name, if it quotes one."""
    found = INNER.first(text)
    if found and found[1].group("inner").strip():
        return ESCAPED_QUOTE.sub(r"\1", found[1].group("inner").strip()), found[0].name
    return None


# a quote escaped once or more (a JSON string inside a JSON string): the quoted error reads with its own quotes
ESCAPED_QUOTE = re.compile(r"""\\+(['"])""")


def cascade(text: str) -> str:
    """The wrapper this message is (its name), or "" when it is no known wrapper."""
    found = WRAPPERS.first(text)
    return found[0].name if found else ""


# A family's words inside a cause no family names: the line is that cause's, left unplaced rather than read as the family.
# errno EDQUOT's "Disk quota exceeded" (glibc errlist.h) is a filesystem's limit, not an API's quota.
NOT_FAMILY: dict[str, re.Pattern[str]] = {"client_quota": re.compile(r"\bdisk quota\b|\[Errno 122\]|\bEDQUOT\b", re.I)}


def family(text: str, inner: tuple[str, str] | None = None, wrapper: str = "", whole: bool = True) -> Pattern | None:
    """The keyword family a failure line no template matched belongs to, with the text it quotes
    (`inner`, else found here) read first: the wrapped error states the cause, the wrapper only
    that something failed. A known wrapper (`wrapper`, a name of WRAPPERS) quoting an error is read
    through it alone: its own words, and the HTTP status a client printed around it (Ollama's CLI:
    "Error: 500 Internal Server Error: llama runner process has terminated: <cause>"), are the cascade.
    A line that is no error by its shape (`whole` false: a person's sentence around what it quotes,
    "... so every all-reduce goes through NCCL") is read only through what it quotes: a family's word in
    the prose around it names what the writer talks about, not a failure's cause."""
    inner = inner or inner_message(text)
    for candidate in ([inner[0]] if inner else []) + ([] if wrapper and inner or not whole else [text]):
        found = FAMILIES.first(ev.without_advice(candidate))
        if found and inner and inner[1] in ANSWERED and found[0].kind in LINK_KINDS:
            return None  # a server answered: the client reached it, the connection the body names is the server's own upstream
        if found and not (found[0].kind in NOT_FAMILY and NOT_FAMILY[found[0].kind].search(candidate)):
            return found[0]
    return None


# the client's own link to the server: a server's error body that names one is about its upstream (a proxy's
# {"detail": "Could not connect to backend server."} beside its 502/504), which the status it answered with places
LINK_KINDS = frozenset({"client_refused"})


# kinds that say only that a request failed (a status, a page instead of JSON): the error a wrapper
# quotes inside such a line says why
_WRAPPER_KINDS = {"http_response", "client_bad_response", "client_not_found"}
# a status whose error body states a more specific cause of the channel: a 5xx around any (a gateway's 503 for a model it
# has no channel for: one-api's "无可用渠道"; a proxy's 500 around the provider's 401 or quota), a 401/403 around an
# account out of quota or a model the key may not use (one-api's 403 "user quota is not enough"): the body's cause
_STATUS_KINDS: dict[str, frozenset[str] | None] = {
    "client_server_error": None,  # any client_* cause
    "client_auth": frozenset({"client_quota", "client_model_not_found", "client_rate_limit"}),
}


def _body_states_access(found: tuple[ev.Rule, dict[str, object]] | None, quoted: tuple[ev.Rule, dict[str, object]]) -> bool:
    if found is None or found[0].kind not in _STATUS_KINDS:
        return False
    causes = _STATUS_KINDS[found[0].kind]
    return quoted[0].kind.startswith("client_") if causes is None else quoted[0].kind in causes


ADDED_KEYS = frozenset({"tier", "cascade", "phase_hint"})  # what match() adds to a rule's own values


def match(text: str) -> tuple[ev.Rule, dict[str, object]] | None:
    """The rule grammar (doctor.logparse.events.match), read the way a chain is: the error quoted
    inside a wrapper when the rules read it as the line's cause, or when the line itself only says
    that a request failed; a symptom word that belongs to another cause's context is that cause."""
    found = ev.match(text)
    inner = inner_message(text)
    quoted = ev.match(inner[0]) if inner else None
    if inner is not None and quoted is not None and quoted[0].kind not in _WRAPPER_KINDS and (
            found is None or found[0].kind in _WRAPPER_KINDS or found[0].kind == quoted[0].kind or inner[1] in SYMPTOM_WRAPPERS
            or _body_states_access(found, quoted)):
        # the numbers the whole line gives for the same cause stay (llama-server's 400 quotes its n_ctx beside the message)
        outer = found[1] if found is not None and found[0].kind == quoted[0].kind else {}
        values = {**outer, **quoted[1], "tier": f"template (inside the {inner[1]})"}
        if inner[1] in ANSWERED:  # the server answered a request with it: it failed while serving
            values["phase_hint"] = "serving"
        found = quoted[0], values
    if found is None:
        return None
    rule, values = found
    if rule.kind == "cuda_oom" and "phase_hint" not in values and phase_hint(text):
        values = {**values, "phase_hint": phase_hint(text)}
    wrapper = cascade(text)
    if wrapper:  # NCCL's watchdog after the first failed collective, an echo of a failed load
        values = {**values, "cascade": wrapper}
    for symptom, context, owner in OWNERS:
        if rule.kind == symptom and context.search(text):
            return _OWNER_RULES[owner], {**values, "tier": f"template, owned by its context ({owner})"}
    return rule, values
