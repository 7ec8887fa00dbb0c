"""A failure read the way an engineer reads it (doctor/logparse/chains.py): the error inside its
wrapper, the first error before its cascade, keyword families when no template knows the wording,
the tier each finding was recognised by, and ties broken by causal order in the log.

Every log line here is real (fixtures/logs/chains/*.log with their sources in the sidecars, or the
source named next to the line); the one composed line is marked as such and says what it is made of.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.findings import Finding
from llm_doctor.logparse import chains
from llm_doctor.logparse.scan import scan_lines
from llm_doctor.report import build_report, causal_order, rank

CHAINS = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "chains"
LOGS = CHAINS.parent
OOM_CODES = {"load.weights_oom", "load.runtime_oom"}


def analyze(path: Path):
    facts = load_paths([str(path)], Deadline(30))
    return build_report(run_checks(facts, select(load_checks()), Deadline(30)), facts), facts


def events_of(text: str):
    return scan_lines(io.BytesIO(text.encode()).readlines(), "t.log")[0].events


# --- wrapped errors: each chain shape ---------------------------------------------------------


def test_the_worker_error_vllm_quotes_is_the_finding_and_engine_dead_is_its_cascade() -> None:
    """vLLM V1: RuntimeError("Worker failed with error '<the worker's error>'") carries the worker's
    NPU OOM; the API server's EngineDeadError after it is the cascade, never the root."""
    report, facts = analyze(CHAINS / "vllm-ascend-v1-worker-failed-npu-oom.log")
    top = report.findings[0]
    assert top.code in OOM_CODES, [f.code for f in report.findings]
    assert any("NPU out of memory. Tried to allocate 326.00 MiB" in line for line in top.evidence)
    # torch_npu's message is a catalogue template (Ascend/pytorch NPUCachingAllocator.cpp): its numbers are read
    assert "recognised by: template (inside the vLLM worker)" in top.evidence
    assert "tried to allocate 0.3184 GiB; GPU total 60.96 GiB; free 0.0066 GiB" in top.evidence
    dead = [e for e in facts.logs.events if "EngineDeadError" in e.lines[0]]
    assert dead and dead[0].values["cascade"] == "vLLM engine dead"


def test_during_handling_the_first_exception_is_the_cause() -> None:
    """LangChain raises "Could not import vllm" while handling vllm's own ImportError: the inner
    libcudart.so.12 error is the cause."""
    report, _ = analyze(CHAINS / "langchain-vllm-libcudart-during-handling.log")
    top = report.findings[0]
    assert top.code == "load.cuda_mismatch"
    assert any("libcudart.so.12: cannot open shared object file" in line for line in top.evidence)
    assert "recognised by: template" in top.evidence


def test_undici_cause_names_the_timeout_that_fetch_failed_hides() -> None:
    report, _ = analyze(CHAINS / "node-undici-fetch-failed-cause-headers-timeout.log")
    top = report.findings[0]
    assert top.code == "access.timeout"
    assert any("[cause]: HeadersTimeoutError: Headers Timeout Error" in line for line in top.evidence)
    assert "recognised by: template (inside the caused by)" in top.evidence  # the catalogue has undici's wording


def test_ollama_runner_death_carries_the_runners_error_in_its_error_field() -> None:
    """Ollama's scheduler logs `error="llama runner process has terminated: ... cudaMalloc failed: out
    of memory"`; the 500 the API answered after it is a symptom."""
    report, facts = analyze(CHAINS / "ollama-runner-terminated-cudamalloc-oom.log")
    top = report.findings[0]
    assert top.code in OOM_CODES, [f.code for f in report.findings]
    (oom,) = [e for e in facts.logs.events if e.kind == "cuda_oom"]
    assert oom.values["tier"] == "family: out of memory" and oom.values["cascade"] == "Ollama runner"


# openai-python formats an HTTP error as f"Error code: {status} - {body}" (openai/_client.py,
# _make_status_error_from_response); vLLM's ErrorResponse body has object/message/type/param/code
# (vllm/entrypoints/openai/protocol.py). COMPOSED from those two formats and the real CUDA OOM message
# of fixtures/logs/vllm-mllama-tp4-profile-run-oom.log line 50 (vllm-project/vllm#8903).
GATEWAY_503 = ("openai.InternalServerError: Error code: 503 - {'object': 'error', 'message': 'CUDA out of memory. Tried to "
               "allocate 19.63 GiB. GPU 3 has a total capacity of 79.15 GiB of which 17.73 GiB is free.', 'type': "
               "'InternalServerError', 'param': None, 'code': 503}\n")


def test_the_engines_cuda_error_inside_a_503_body_is_the_engines_finding(tmp_path: Path) -> None:
    log = tmp_path / "client.log"
    log.write_text(GATEWAY_503)
    report, facts = analyze(log)
    top = report.findings[0]
    assert top.code == "load.runtime_oom", [f.code for f in report.findings]  # it answered a request: serving
    assert "access.server_error" not in [f.code for f in report.findings[:1]]
    (oom,) = [e for e in facts.logs.events if e.kind == "cuda_oom"]
    assert oom.values["tier"] == "template (inside the HTTP error body)" and oom.values["tried"] == 19.63
    assert "recognised by: template (inside the HTTP error body)" in top.evidence


# ray/exceptions.py RayTaskError: the worker's exception class in parentheses; the task's name after it
# (Simple-Efficient/RL-Factory#8, description)
RAY_TASK = ("ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=18948, ip=10.164.37.106, "
            "actor_id=2dbcd32867b5c511f131cbb201000000, repr=<main_ppo.TaskRunner object at 0x7f852c0b7490>)")


@pytest.mark.parametrize(("line", "inner", "wrapper"), [
    (RAY_TASK, "ActorDiedError", "Ray task"),
    # vllm-project/vllm#29943 (title)
    ("RuntimeError: Worker failed with error 'DeepGEMM backend is not available or outdated.', please check the stack trace "
     "above for the root cause", "DeepGEMM backend is not available or outdated.", "vLLM worker"),
    # ollama/ollama-js#144 (fixture line 9)
    ("[cause]: HeadersTimeoutError: Headers Timeout Error", "HeadersTimeoutError: Headers Timeout Error", "caused by"),
    # shared/corpus/d037.log line 41 (vllm-project/vllm#1824): urllib3's "(Caused by SSLError(...))"
    ("urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url: "
     "/TheBloke/Yi-34B-Chat-AWQ/resolve/main/config.json (Caused by SSLError(SSLEOFError(8, '[SSL: UNEXPECTED_EOF_WHILE_READING] "
     "EOF occurred in violation of protocol (_ssl.c:1007)')))", "SSLError(SSLEOFError(8,", "caused by"),
    # corpus/z106.log (huggingface/text-generation-inference, TGI launcher): a Rust error enum quoting its message
    ("Error: Warmup(Generation(\"Not enough memory to handle 4096 prefill tokens. You need to decrease "
     "`--max-batch-prefill-tokens`\"))", "Not enough memory to handle 4096 prefill tokens.", "error enum"),
])
def test_each_wrapper_shape_quotes_its_inner_error(line: str, inner: str, wrapper: str) -> None:
    found = chains.inner_message(line)
    assert found is not None and found[0].startswith(inner) and found[1] == wrapper


def test_a_more_specific_wrapper_match_is_kept_over_the_quoted_symptom() -> None:
    """huggingface.co + SSLError is the hub being unreachable (the outer line says where), not a
    client TLS problem: the quoted error is read only when the rules agree or the line says nothing."""
    line = ("requests.exceptions.SSLError: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Max retries "
            "exceeded with url: /TheBloke/Yi-34B-Chat-AWQ/resolve/main/config.json (Caused by SSLError(SSLEOFError(8, "
            "'[SSL: UNEXPECTED_EOF_WHILE_READING] EOF occurred in violation of protocol (_ssl.c:1007)')))\"), "
            "'(Request ID: 91b68885-d0ae-4e19-bb51-63855c72ce75)')")  # shared/corpus/d037.log line 88
    rule, values = chains.match(line)  # type: ignore[misc]
    assert rule.kind == "hub_unreachable" and "tier" not in values


# --- cascades: the first error, not what it set off ---------------------------------------------


def test_vllm_v1_engine_core_failure_is_the_cascade_of_the_workers_error() -> None:
    report, _ = analyze(CHAINS / "vllm-0.9.2-v1-passmanager-engine-core-cascade.log")
    top = report.findings[0]
    assert top.code == "load.unrecognized_failure"
    assert top.title.endswith("RuntimeError: PassManager::run failed")
    assert "recognised by: unrecognised" in top.evidence
    assert top.fixes[0].command == 'gh search issues --repo vllm-project/vllm "RuntimeError: PassManager::run failed"'


def test_sglang_scheduler_exception_then_sigquit() -> None:
    report, facts = analyze(CHAINS / "sglang-scheduler-libcuda-importerror-sigquit.log")
    # the driver's libcuda missing, with no ROCm platform in this excerpt, is a process given no GPU (tests/test_r_env.py)
    assert report.findings[0].code == "load.gpu_not_visible"
    assert any("libcuda.so.1: cannot open shared object file" in line for line in report.findings[0].evidence)
    sigquit = [e for e in facts.logs.events if "Received sigquit" in e.lines[0]]  # the echo template and the error line
    assert sigquit and all(e.values["cascade"] == "SGLang launcher" for e in sigquit)


def test_killed_after_a_childs_failure_is_the_launcher_not_the_oom_killer() -> None:
    """SGLang's sigquit handler kills its own process tree (sglang/srt/entrypoints/engine.py): the
    shell's `Killed` after it is no host OOM; the scheduler's Triton error is the failure."""
    report, _ = analyze(CHAINS / "sglang-triton-out-of-resources-sigquit-killed.log")
    codes = [f.code for f in report.findings]
    assert "load.host_oom" not in codes
    assert codes[0] == "load.unrecognized_failure"
    assert "triton.runtime.errors.OutOfResources: out of resource: shared memory" in report.findings[0].title


# vllm/v1/engine/core.py (EngineCore failed to start), utils.py (Engine core initialization failed),
# multiproc_executor.py (WorkerProc initialization failed), sglang engine.py (sigquit), torch's
# ProcessGroupNCCL watchdog, TGI launcher: each line from the engine's source or a log quoting it
@pytest.mark.parametrize(("line", "wrapper"), [
    ("ERROR 06-30 13:53:19 [core.py:515] EngineCore failed to start.", "vLLM EngineCore"),  # shared/corpus/d011.log
    ("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}", "vLLM engine core"),
    ("Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.",
     "vLLM worker process"),  # shared/corpus/d011.log
    ("[2025-02-09 21:23:00] Received sigquit from a child proces. It usually means the child failed.", "SGLang launcher"),
    ("[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
     "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600033 milliseconds before timing out.", "NCCL watchdog"),
    ("Error: ShardCannotStart", "TGI launcher"),
])
def test_wrapper_messages_are_data(line: str, wrapper: str) -> None:
    assert chains.cascade(line) == wrapper


def test_the_first_nccl_error_is_quoted_before_its_watchdog_cascade() -> None:
    text = (CHAINS / "nccl-ibv-create-cq-enomem.log").read_text() + (
        # the watchdog's wording (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp), repeated per rank
        "[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600033 milliseconds before timing out.\n") * 3
    nccl = [e for e in events_of(text) if e.kind == "nccl_error"]
    assert [bool(e.values.get("cascade")) for e in nccl] == [False, True]
    assert nccl[1].count == 3 and "ibv_create_cq" in nccl[0].lines[0]


# --- keyword families --------------------------------------------------------------------------


@pytest.mark.parametrize(("line", "family", "kind"), [
    ("Error: could not connect to ollama app, is it running?", "connection refused", "client_refused"),  # corpus/z029 (ollama)
    ("Error: pull model manifest: Get \"https://registry.ollama.ai/v2/library/llama2/manifests/latest\": dial tcp: lookup "
     "registry.ollama.ai on <PRIVATE_IP_1>:53: no such host", "name resolution", "client_dns"),  # corpus/z179
    ("Post \"http://localhost:11434/api/chat\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
     "timeout", "client_timeout"),  # corpus/z112
    ("ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory", "out of memory", "cuda_oom"),  # corpus/z172
    ("Refer to the documentation on how to address the out of memory issue: https://docs.ray.io/en/latest/ray-core/scheduling/"
     "ray-oom-prevention.html.", "host memory", "host_oom"),  # shared/corpus/d016.log (Ray's memory monitor)
    ("RuntimeError: HIP error: invalid device function", "CUDA/driver", "cuda_mismatch"),  # corpus/z141 (sglang)
    ("llama_model_load: error loading model: error loading model vocabulary: unknown pre-tokenizer type: 'deepseek-r1-qwen'",
     "unsupported model", "arch_unsupported"),  # corpus/z013 (llama.cpp)
    ("error loading model: unrecognized tensor type 5", "quantization", "quant_unsupported"),  # corpus/z020 (llama.cpp)
    ("ImportError: Please install bitsandbytes>=0.44.0 via `pip install bitsandbytes>=0.44.0` to use bitsandbytes quantizer.",
     "quantization", "quant_unsupported"),  # corpus/z186 (sglang)
    ("llama_model_load: error loading model: invalid split file: ../models/command-r-plus-104b-Q2_K_S.gguf", "model files",
     "model_missing"),  # corpus/z018 (llama.cpp)
    ("ValueError: No supported config format found in mistralai/Mistral-7B-v0.1", "model files", "model_missing"),  # corpus/z120
    # NVIDIA/nccl#1191 (title): ENOMEM from the verbs library is InfiniBand's memlock limit
    ("misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory", "NCCL", "nccl_error"),
    # IBM/project-ai-services (corpus/m009): vLLM's CPU backend has no GPU to run out of, its OOM is the pod's RAM limit
    ("- The vllm cpu pod for llm crashes intermittently due to OOM.", "host memory", "host_oom"),
    # NVIDIA/TensorRT-LLM (corpus/f068, "Llama build Killed"): a process killed for the memory it consumes is the OOM killer's
    ("loading gpt2-13b model also consumes much memory and be killed.", "host memory", "host_oom"),
    # a GPU's OOM in a CPU-named sentence stays the GPU's: the tempered gap stops at the GPU's words
    ("the CPU workers fail with CUDA out of memory", "out of memory", "cuda_oom"),
])
def test_keyword_families_name_the_cause(line: str, family: str, kind: str) -> None:
    found = chains.family(line)
    assert found is not None and (found.name, found.kind) == (family, kind)


def test_a_file_noun_far_from_not_found_is_no_missing_file() -> None:
    """The "no such file" family's noun and its "not found" stand within one short clause: a model named at the start
    of a sentence whose "not found" is another subject's is no missing model file. Triton's tensorrt_llm backend
    (corpus/o033: a config key of another TensorRT-LLM version) and a 404 told in words (corpus/o205)."""
    assert chains.family("Model 'tensorrt_llm' loading failed with error: key 'use_context_fmha_for_generation' not found") is None
    assert chains.family("I am sucessfully running llama3.1 model locally in command prompt but when i try to access it via api "
                         "it keeps giving 404 not found to me") is None
    # the family's own cases keep it: the noun with its path or name, then the words
    for line in ("RuntimeError: checkpoint /ckpt/step_100 does not exist", "ValueError: tokenizer.model not found in /models/llama"):
        found = chains.family(line)
        assert found is not None and (found.name, found.kind) == ("no such file", "model_missing")


def test_no_family_for_a_failure_that_names_no_cause() -> None:
    assert chains.family("Error generating article: TypeError: fetch failed") is None  # ollama/ollama-js#144
    # an internal wait of the engine is no client's request timing out (the fixture of test_load_checks)
    assert chains.family("ray.exceptions.RayChannelTimeoutError: System error: Timed out waiting for object available to read.") is None


def test_a_degraded_start_is_no_failure() -> None:
    """SGLang says a tuned kernel config file is missing and goes on with defaults: "not found" in
    that line names no missing model file, and no failure at all (shared/real/other-engines/sglang-0.4.3-
    deepseek-r1-tp8-startup-decode-batches.txt line 146, sgl-project/sglang#4161): the healthy log is ok."""
    line = ("[2025-03-07 09:25:33 TP4] Using default MoE config. Performance might be sub-optimal! Config file not found at "
            "/root/miniconda3/envs/deepseekr1/lib/python3.12/site-packages/sglang/srt/layers/moe/fused_moe_triton/configs/"
            "E=256,N=128,device_name=NVIDIA_H800,dtype=fp8_w8a8,block_shape=[128, 128].json\n")
    assert events_of(line) == []


def test_memory_registration_enomem_is_nccl_not_host_oom() -> None:
    """ibv_reg_mr / ibv_create_cq fail with "Cannot allocate memory" when the locked-memory limit is
    low: the rule's symptom word (host OOM) belongs to NCCL's InfiniBand transport here."""
    report, _ = analyze(CHAINS / "nccl-ibv-create-cq-enomem.log")
    codes = [f.code for f in report.findings]
    assert codes[0] == "load.nccl_failed" and "load.host_oom" not in codes
    # the catalogue holds NCCL's own ibvwrap.cc wording; without it the context rule reads it the same way
    assert report.findings[0].evidence[-1] in ("recognised by: template", "recognised by: template, owned by its context (nccl_error)")
    # NVIDIA/nccl-tests#206 (title): the registration call itself
    rule, _ = chains.match("misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory")  # type: ignore[misc]
    assert rule.kind == "nccl_error"
    # the same words without InfiniBand's context stay host memory (corpus/z165, SGLang faulthandler)
    rule, _ = chains.match("OSError: [Errno 12] Cannot allocate memory")  # type: ignore[misc]
    assert rule.kind == "host_oom"


# --- causal order breaks ties -------------------------------------------------------------------

NCCL_LINE = (CHAINS / "nccl-ibv-create-cq-enomem.log").read_text().splitlines()[0]
OOM_LINE = (LOGS / "vllm-mllama-tp4-profile-run-oom.log").read_text().splitlines()[49]


@pytest.mark.parametrize(("lines", "nccl_first"), [([NCCL_LINE, OOM_LINE], True), ([OOM_LINE, NCCL_LINE], False)])
def test_the_earliest_root_error_wins_among_equals(tmp_path: Path, lines: list[str], nccl_first: bool) -> None:
    """load.gpu_oom runs before load.nccl; both are errors of the load layer and neither explains
    the other: the one whose error came first in the log ranks first."""
    log = tmp_path / "engine.log"
    log.write_text("\n".join(lines) + "\n")
    report, _ = analyze(log)
    codes = [f.code for f in report.findings if f.severity == "error"]  # the unplaced OOM's weights alternative is a warning
    assert len(codes) == 2 and "load.nccl_failed" in codes and set(codes) & OOM_CODES, codes
    assert (codes[0] == "load.nccl_failed") is nccl_first


# Claude Code's 529 answer (fixtures/logs/client-claude-code-529-overloaded.log): an http_response event, not a fatal one;
# openai-python's timeout (src/openai/_exceptions.py APITimeoutError: message="Request timed out.") is a fatal one
OVERLOADED_LINE = (LOGS / "client-claude-code-529-overloaded.log").read_text().splitlines()[0]
TIMEOUT_LINE = "openai.APITimeoutError: Request timed out."


@pytest.mark.parametrize(("lines", "first"), [([OVERLOADED_LINE, TIMEOUT_LINE], "access.server_error"),
                                              ([TIMEOUT_LINE, OVERLOADED_LINE], "access.timeout")])
def test_a_line_that_is_no_fatal_event_still_places_its_finding(tmp_path: Path, lines: list[str], first: str) -> None:
    """Both are access errors of one check and neither explains the other: the answer that came first in the log
    ranks first, though only the timeout is a fatal event."""
    log = tmp_path / "client.log"
    log.write_text("\n".join(lines) + "\n")
    report, _ = analyze(log)
    assert [f.code for f in report.findings] == [first, *({"access.server_error", "access.timeout"} - {first})]


# a vLLM start-up line (shared/real/vllm-startup, v0.10.1.1): no event, what the engine did while it ran
VERSION_LINE = "(APIServer pid=1671) INFO 09-04 01:02:21 [api_server.py:1805] vLLM API server version 0.10.1.1"


def test_a_quoted_line_that_is_no_event_places_its_finding_after_the_events(tmp_path: Path) -> None:
    """Two warnings of one layer: the one that quotes a line of the log (an event or not) before the one that quotes
    none (a value read from the command line); an error event before that line, wherever it is."""
    log = tmp_path / "engine.log"
    log.write_text(f"{VERSION_LINE}\n{NCCL_LINE}\n")
    facts = load_paths([str(log)], Deadline(30))
    assert [e.line_no for e in facts.logs.events] == [2]  # the version line is no event
    said = Finding("perf.prefix_caching_off", "x", [f"{log}:1: {VERSION_LINE}"], severity="warn")
    unplaced = Finding("perf.batching_limited", "y", ["max_num_seqs=1 (command line in the log)"], severity="warn")
    failed = Finding("load.nccl_failed", "z", [f"{log}:2: {NCCL_LINE}"], severity="warn")
    causal = causal_order([unplaced, said, failed], facts)
    assert id(unplaced) not in causal and causal[id(failed)] < causal[id(said)]
    assert [f.code for f in rank([unplaced, said], causal)] == ["perf.prefix_caching_off", "perf.batching_limited"]


def test_rank_uses_causal_order_only_among_equals() -> None:
    late_error, early_warn = Finding("load.nccl_failed", "x"), Finding("load.shm_insufficient", "y", severity="warn")
    early_error, nowhere = Finding("load.runtime_oom", "z"), Finding("load.cuda_mismatch", "w")
    causal = {id(late_error): (0, 0, 9), id(early_warn): (0, 0, 1), id(early_error): (0, 0, 2)}
    ranked = rank([nowhere, late_error, early_warn, early_error], causal)
    assert [f.code for f in ranked] == ["load.runtime_oom", "load.nccl_failed", "load.cuda_mismatch", "load.shm_insufficient"]


# a person's sentence around a quoted message (corpus/g196, a vLLM perf report): the quote is no error by its shape
# and NCCL is only what the traffic goes through
G196 = ("Our four V100 SXM2 32 GB sit behind one PCIe (PLX) switch: P2P works at PCIe line rate but there is no NVLink. On "
        "that topology `can_use_custom_all_reduce_with_nvlink()` rejects the custom all-reduce for more than two GPUs (\"not "
        "supported on more than two PCIe-only GPUs\"), so every TP all-reduce goes through NCCL.")


def test_a_stated_perf_problem_places_the_failure_quoted_in_its_sentence(tmp_path: Path) -> None:
    """The quote is no engine failure the log shows, so perf.stated judges the sentence; the failure no rule places is
    what the sentence quotes of the slow link, and ranks after the statement that places it."""
    log = tmp_path / "report.log"
    log.write_text(G196 + "\n")
    report, _ = analyze(log)
    assert [f.code for f in report.findings] == ["perf.slow_interconnect", "load.unrecognized_failure"]
    assert [x.command for x in report.findings[0].fixes] == ["nvidia-smi topo -m"]


def test_the_family_tier_needs_an_error_shaped_line() -> None:
    (event,) = events_of(G196 + "\n")
    assert event.kind == "error_line" and "tier" not in event.values
    # said, not logged: the engine log does not show the engine failed, so the perf checks still judge it
    assert not event.fatal
    assert chains.family(G196, whole=False) is None and chains.family(G196) is not None
    # the same family's words on a line that is an error by its shape still name it (NVIDIA/nccl#1191, as above)
    (event,) = events_of("misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory\n")
    assert event.kind == "nccl_error"


# --- a cause before its symptom -------------------------------------------------------------------

# nvidia-smi's own words when the driver does not answer (doctor/data/families.jsonl "GPU not visible"), and the kernel's
# Xid 119 for the same GPU: its GSP stopped answering RPCs (/work/shared/real/k8s/dmesg-ctime-xid-119-gsp-rpc-timeout-gpud.txt,
# leptonai/gpud components/accelerator/nvidia/xid/testdata/dmesg-with-xid-119.log)
SMI_FAILED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
              "driver is installed and running.")
XID_119 = ("[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of "
           "waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).")


def test_a_gpu_fault_explains_the_gpu_no_process_sees(tmp_path: Path) -> None:
    """nvidia-smi's failure is printed first, but the GPU the driver lost is its cause: the fault ranks first, with the
    reset of the GPU the Xid line names."""
    log = tmp_path / "node.log"
    log.write_text(f"{SMI_FAILED}\n{XID_119}\n")
    report, _ = analyze(log)
    assert [f.code for f in report.findings] == ["load.gpu_fault", "load.gpu_not_visible"]
    top = report.findings[0]
    assert top.title == "GPU hardware/driver fault (Xid 119)"
    assert any("Timeout after 6s of waiting for RPC response from GPU4 GSP" in line for line in top.evidence)
    assert "nvidia-smi -r -i 0000:9b:00.0" in [x.command for x in top.fixes]


def test_an_oom_of_vllms_cpu_backend_is_the_pods_memory(tmp_path: Path) -> None:
    """IBM/project-ai-services (corpus/m009): the CPU backend has no GPU memory to run out of; the pod's limit is the fix."""
    from tests.analysis import findings_of

    log = tmp_path / "report.log"
    log.write_text("- The vllm cpu pod for llm crashes intermittently due to OOM.\n")
    top = findings_of(log)[0]
    assert top.code == "load.host_oom"
    assert top.evidence[-1] == "recognised by: family: host memory"
    assert top.fixes[0].summary == "Give the container/pod more memory (Kubernetes: resources.limits.memory; Docker: --memory)"


def test_a_missing_kernel_build_tool_is_the_cuda_stack_not_a_model_file(tmp_path: Path) -> None:
    """SGLang's FlashInfer backend JIT-builds its kernels with ninja (corpus/p050): CPython's subprocess raises
    FileNotFoundError naming the program it could not run, "[Errno 2] No such file or directory: 'ninja'"."""
    from tests.analysis import findings_of

    line = "FileNotFoundError: [Errno 2] No such file or directory: 'ninja'"
    found = chains.family(line)
    assert found is not None and (found.name, found.kind) == ("kernel toolchain", "cuda_mismatch")
    log = tmp_path / "sglang.log"
    log.write_text(line + "\n")
    top = findings_of(log)[0]
    assert top.code == "load.cuda_mismatch" and top.evidence[-1] == "recognised by: family: kernel toolchain"
    assert top.fixes[0].command == "pip install ninja"
    # a file's path is still the model's files
    log.write_text("FileNotFoundError: [Errno 2] No such file or directory: './workspace/config.json'\n")
    assert findings_of(log)[0].code == "load.model_files"


@pytest.mark.parametrize(("line", "code", "command"), [
    # xorbitsai/inference (corpus/p055): the container was started without --gpus, so the driver's libcuda is not mounted
    ("Failed to import from vllm._C with ImportError('libcuda.so.1: cannot open shared object file: No such file or directory')",
     "load.gpu_not_visible", "--gpus all"),
    # the catalogue's own sample (vllm.jsonl, vllm/_custom_ops.py): a symbol of another torch stays the CUDA stack's
    ("WARNING 01-30 20:57:18 _custom_ops.py:14] Failed to import from vllm._C with ImportError('/home/orin/tools/anaconda3/envs/"
     "sglang/lib/python3.10/site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi')",
     "load.cuda_mismatch", "pip install --force-reinstall --no-cache-dir vllm"),
])
def test_an_extension_import_warning_is_read_by_the_import_error_it_quotes(tmp_path: Path, line: str, code: str, command: str) -> None:
    """vLLM's `logger.warning("Failed to import from %s with %r", module, e)`: the ImportError names the cause."""
    from tests.analysis import findings_of

    log = tmp_path / "engine.log"
    log.write_text(line + "\n")
    top = findings_of(log)[0]
    assert top.code == code and top.evidence[-1] == "recognised by: template (inside the extension import)"
    assert top.fixes[0].command == command
