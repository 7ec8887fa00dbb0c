"""Load and access failures stated in words (doctor/logparse/failure_prose.py, checks/load/stated.py):
real sentences from public threads map to the code they name; questions, advice and healthy statements
stay quiet; a statement ranks below a failure the pasted output shows and above doctor.input_incomplete,
and is never an all-clear."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from llm_doctor.cli import main
from llm_doctor.logparse import failure_prose
from tests.analyze_json import analyze

FAMILIES = [
    # https://github.com/vllm-project/vllm-ascend/issues/3819 (title)
    ("load.engine_outdated", "[Bug]: The lower version of Transformers does not recognize this architecture like `qwen3_vl`"),
    # https://github.com/InternLM/lmdeploy/issues/4404
    ("load.engine_outdated", "Fallback to pytorch engine because `Qwen/Qwen3.5-35B-A3B` not supported by turbomind engine"),
    # https://github.com/dylanyunlon/Neuron_SP/issues/4 (title)
    ("load.tp_invalid", "[P0] 32 heads ÷ 5 GPUs 不整除 — TP 不可用"),
    # https://github.com/NVIDIA/TensorRT-LLM/issues/1992 (title)
    ("load.tp_invalid", "The qwen demo faileed to run: RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: MPI size 1 != TP size 2 * PP size 1"),
    # https://github.com/EvolvingLMMs-Lab/lmms-eval/pull/863
    ("load.remote_code", "the problem is that trust_remote_code argument do not correctly pass to the sglang Engine"),
    # https://github.com/vllm-project/llm-compressor/pull/2319
    ("load.gpu_memory_occupied", "Appers as if oneshot memory is not freed resulting in gpu_memory_utilization errors with vLLM"),
    # https://github.com/vllm-project/vllm-omni/issues/2317 (corpus i065): workers that outlived their container
    ("load.gpu_memory_occupied", "Actual: 2 orphaned VLLM::Worker processes (one per stage) remain alive, holding ~22GB VRAM."),
    # https://github.com/NVIDIA/TensorRT-LLM/issues/1038
    ("load.cuda_mismatch", "The error typically indicates a mismatch between the TRT-LLM versions used when generating the TRT engine and "
                           "the version used by the runtime."),
    # https://github.com/mitchross/talos-argocd-proxmox/pull/1766
    ("load.host_oom", "The litellm pod OOMKilled (exit 137) within ~11s of starting on every attempt"),
    # https://github.com/mozilla-ai/llamafile/issues/372 (no phase named, but the model's start)
    ("load.weights_oom", "But it seem not possible to allocate  66.50 MB of memory on my card, even if I just boot the machine without any "
                         "use of the GPU before."),
    # https://github.com/sonichi/sutando/pull/691 (the quotes in the key cause the 401: the cause is named)
    ("access.key_malformed", "The Authorization header ends up as `Bearer \\\"abc123\\\"` and the request 401s with no useful error"),
    # https://github.com/BerriAI/litellm/issues/2127
    ("access.proxy_failed", "Adding `http://<PRIVATE_IP_1>` makes the error go away, but litellm ends up hitting the corporate proxy again."),
    # https://github.com/open-webui/docs/pull/308
    ("access.streaming_broken", "If proxy buffer is turned on, nginx will buffer data received from openwebui and then relay it to user's "
                                "browser in chunks of 4KB/8KB."),
    # https://github.com/ggml-org/llama.cpp/pull/20872
    ("access.streaming_broken", "Since SSE streams are long-lived, the client never receives the first chunk and appears to hang indefinitely"),
    # https://github.com/wandb/openui/issues/215
    ("access.connect_failed", "it keeps running into the following error: Couldn't connect to Ollama at http://127.0.0.1:11434"),
    # https://github.com/ollama/ollama/issues/823
    ("access.tls_failed", "failed to verify certificate: x509: certificate signed by unknown authority"),
    # https://github.com/brianpetro/obsidian-smart-connections/issues/565
    ("access.rate_limited", "In the console i'm seeing a 429 error from openrouter, indicating \"Rate limit exceeded: free-models-per-day\"."),
    # https://github.com/autohandai/code-cli/issues/96
    ("access.timeout", "Ollama request timed out after 30s."),
    # https://github.com/PromptEngineer48/Ollama/issues/9
    ("access.model_not_found", "I'm getting a 404 error when trying to query the model"),
    # https://github.com/abetlen/llama-cpp-python/issues/1882 (title): CUDA, not "GPU", is what was not detected
    ("load.gpu_not_visible", "CUDA not detected when running without --gpus all"),
    # https://github.com/ollama/ollama/issues/13423, /10381, /7323 (titles): the engine ran on the CPU instead
    ("load.gpu_not_visible", "Ollama doesn't run on GPU and it runs on CPU"),
    ("load.gpu_not_visible", "Ollama is not utilizing GPU"),
    ("load.gpu_not_visible", "ollama ps reporting \"100% GPU\" while model is running on CPU only."),
    # corpus/i005 (triton-inference-server/server, Triton 23.11): the load named before "takes too long"
    ("load.startup_timeout", "So when loading a model takes too long, k8s thinks the server hangs and restarts it."),
    # corpus m205 (a base endpoint that is a docs page): a bare 404 in a person's words is the path, not the model
    ("access.base_url_invalid", "After selecting the model and sending the chat, this error appears: 404."),
    ("access.base_url_invalid", "Every chat request from the plugin returns a 404 now."),
]


def _paste(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "issue.md"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("code", "sentence"), FAMILIES)
def test_a_sentence_maps_to_the_code_it_names(code, sentence):
    (said,) = failure_prose.statements("issue.md", sentence + "\n")
    assert said.code == code and said.where == "issue.md:1"


@pytest.mark.parametrize("sentence", [
    # wishes to run on the CPU: https://github.com/ollama/ollama/issues/10462 (title), /9624
    "how to run ollama model on CPU instead of GPU even the GPU is available?",
    "I expected the model to run only on my CPU without using the GPU.",
    # a question about a setting: https://github.com/NVIDIA/TensorRT-LLM/issues/2357
    "question 2: When I use the OpenAI server to perform inference on the HF model, where should I configure the trust_remote_code parameter?",
    # a possibility: https://github.com/huggingface/text-generation-inference/issues/2744
    "If TGI warmup succeeds then it means the maximum token budgets are adapted to the hardware available preventing TGI from "
    "reaching OOM errors during inference.",
    # advice, addressed to the reader
    "You could try --enforce-eager, or lower --gpu-memory-utilization if the engine runs out of memory during requests.",
    # healthy
    "Justed tested `v1.41.13`, and it works great, the proxy settings are respected now",
    # a program's line, llama.cpp's function-name prefix (corpus w092): the OOM is the log's to read, not a statement
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 35533.34 MiB on device 0: cudaMalloc failed: out of memory",
    # Ray's list of guesses after a worker vanished (hkust-nlp/simpleRL-reason#98, raylet node_manager.cc): the OOM
    # killer is its first guess whatever happened
    "End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high "
    "memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other "
    "unexpected errors.",
    # an echoed error line, not a person's words: its status and body are the catalogue's to read
    "[mcp_agent.executor.executor] Error executing task: Error code: 404 - {'error': {'message': 'No endpoints found'}}",
])
def test_questions_advice_and_healthy_statements_stay_quiet(sentence):
    assert failure_prose.statements("issue.md", sentence + "\n") == []


def test_a_title_alone_is_a_statement_finding_never_an_all_clear(tmp_path):
    path = _paste(tmp_path, "[Bug]: tensor parallel size 3 does not divide the number of attention heads\n")
    report = analyze(path)
    first = report["findings"][0]
    assert first["code"] == "load.tp_invalid" and first["tier"] == "statement" and first["severity"] == "error"
    assert first["evidence"][0].endswith("issue.md:1: [Bug]: tensor parallel size 3 does not divide the number of attention heads")
    assert [f["code"] for f in report["findings"]][1:] == ["doctor.input_incomplete"]  # below the statement: nothing output was read
    assert report["status"] != "ok"
    res = CliRunner().invoke(main, ["analyze", str(path), "--format", "json"])
    assert res.exit_code == 1 and json.loads(res.output)["status"] != "ok"


def test_a_failure_the_output_shows_ranks_before_the_statement(tmp_path):
    # the kernel's OOM-killer line (shared/real/k8s/kernel-oom-killer-killed-process-line.txt,
    # https://github.com/ggml-org/llama.cpp/issues/76) below the title of another report
    path = _paste(tmp_path, "[Bug]: tensor parallel size 3 does not divide the number of attention heads\n"
                            "Out of memory: Killed process 930269 (python3) total-vm:15643332kB, anon-rss:13201980kB, file-rss:4kB, "
                            "shmem-rss:0kB, UID:0 pgtables:26524kB oom_score_adj:0\n")
    report = analyze(path)
    codes = [f["code"] for f in report["findings"]]
    assert codes[:2] == ["load.host_oom", "load.tp_invalid"]
    assert "tier" not in report["findings"][0] and report["findings"][1]["tier"] == "statement"


def test_a_failure_no_rule_places_ranks_after_the_cause_a_person_names(tmp_path):
    # an exception nobody's rule knows (tests/test_never_all_clear.py's FrobnicationFault) with the
    # maintainer's answer under it: the answer places the failure, so it comes first; the unplaced
    # failure stays in the report, right after it
    path = _paste(tmp_path, "frob.FrobnicationFault: widget count 3 exceeds 2\n"
                            "The request 401s with the key even though it is new\n")
    codes = [f["code"] for f in analyze(path)["findings"]]
    assert codes[:2] == ["access.key_rejected", "load.unrecognized_failure"]


def test_a_statement_the_output_confirms_is_not_repeated(tmp_path):
    # vLLM's own message (shared codes.md load.tp_invalid) under a title that names the same failure:
    # https://github.com/vllm-project/vllm/pull/52535
    path = _paste(tmp_path, "[P0] 32 heads ÷ 5 GPUs 不整除 — TP 不可用\n"
                            "ValueError: Total number of attention heads (64) must be divisible by tensor parallel size (3).\n")
    report = analyze(path)
    tp = [f for f in report["findings"] if f["code"] == "load.tp_invalid"]
    assert len(tp) == 1 and "tier" not in tp[0]


def test_a_pasted_key_is_redacted_in_the_statement():
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    (said,) = failure_prose.statements("issue.md", f"The request 401s with the key {key} even though it is new\n")
    assert said.code == "access.key_rejected"
    from llm_doctor.facts import Facts

    facts = Facts()
    failure_prose.into_facts("issue.md", f"The request 401s with the key {key} even though it is new\n", facts)
    assert key not in facts.said[0].text and "401s" in facts.said[0].text


def test_a_program_record_is_not_a_persons_words():
    # NCCL's own warning and a client's filled form are output (the catalogue's), not a statement
    text = ("NCCL WARN Error while creating shared memory segment /dev/shm/nccl-xxxxx (size 7340384)\n"
            "Status Code: 500\n")
    assert failure_prose.statements("x.log", text) == []
