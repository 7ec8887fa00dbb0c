"""The tiers after the templates (issue #9 item 2): keyword families over the failure, then a
failure stated in prose, and `doctor.input_incomplete` only when nothing in the text states one.

The families are data (doctor/data/families.jsonl): each entry's sample must be recognised by its
own family in the table's order. The prose lines below are the shapes people paste in public
threads (an issue title, a sentence around a quoted error, a markdown code span); the errors they
quote are the sources' own messages (each names where it comes from)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.logparse import chains, families
from llm_doctor.logparse.catalogue import CatalogueError
from llm_doctor.logparse.scan import scan_lines
from llm_doctor.report import build_report

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real"


def report_of(tmp_path: Path, text: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    facts = load_paths([str(path)], Deadline(60))
    return build_report(run_checks(facts, select(load_checks()), Deadline(60)), facts), str(path)


# --- the families, as data -----------------------------------------------------------------------


@pytest.mark.parametrize("entry", families.load(), ids=lambda f: f.where)
def test_each_family_sample_is_recognised_by_its_own_family(entry: families.Family) -> None:
    found = chains.family(entry.sample)
    assert found is not None and (found.name, found.kind) == (entry.name, entry.kind)


def test_no_two_family_entries_share_a_sample() -> None:
    # families.jsonl merges by union: a line changed on one branch beside a line changed on another comes out twice,
    # the old wording beside the new one, and the old one would go on matching what the new one refuses
    samples = [entry.sample for entry in families.load()]
    assert sorted(s for s in set(samples) if samples.count(s) > 1) == []


@pytest.mark.parametrize(("line", "error"), [
    ('{"family": "x", "kind": "no_such_kind", "words": "x", "source": "a/b@v1:c", "sample": "x"}', "unknown event kind 'no_such_kind'"),
    ('{"family": "x", "kind": "cuda_oom", "words": "(", "source": "a/b@v1:c", "sample": "x"}', "words do not compile"),
    ('{"family": "x", "kind": "cuda_oom", "words": "x", "source": "somewhere", "sample": "x"}', "is not owner/repo@ref:path"),
    ('{"family": "x", "kind": "cuda_oom", "words": "x", "source": "a/b@v1:c"}', "missing or empty field(s): sample"),
])
def test_a_bad_family_entry_fails_the_load_with_its_line(tmp_path: Path, line: str, error: str) -> None:
    path = tmp_path / "families.jsonl"
    path.write_text(families.PATH.read_text().splitlines()[0] + "\n" + line + "\n")
    with pytest.raises(CatalogueError) as exc:
        families.load(path)
    assert str(exc.value).startswith("families.jsonl:2: ") and error in str(exc.value)


# --- a family recognises what no template knows, with the values the fix needs ---------------------


def test_a_quoted_error_in_prose_is_read_before_the_sentence(tmp_path: Path) -> None:
    """An issue's title and a sentence quoting PyTorch's DataLoader message in a code span
    (pytorch/pytorch torch/csrc/DataLoader.cpp: "DataLoader worker (pid %d) is killed by signal: %s"):
    the quoted error is the failure, recognised by the shared-memory family; the title is no root."""
    report, path = report_of(tmp_path, "[Bug]: the server dies right after loading the weights\n"
                                       "It fails with `RuntimeError: DataLoader worker (pid 77) is killed by signal: Bus error.`\n")
    assert [f.code for f in report.findings] == ["load.shm_insufficient"]
    f = report.findings[0]
    assert f.evidence[0] == f"{path}:2: It fails with `RuntimeError: DataLoader worker (pid 77) is killed by signal: Bus error.`"
    assert "recognised by: family: shared memory" in f.evidence
    assert [x.command for x in f.fixes][:2] == ["--ipc=host", "df -h /dev/shm"]  # no size in the log to compute one from


def test_a_tp_split_family_captures_the_sizes(tmp_path: Path) -> None:
    """TGI's wording for a KV-head count the shards do not divide (text-generation-inference v3.3.7
    flash_llama_modeling.py): the family alone captures both sizes (a catalogue template reads this
    wording too now, and wins, as a template should)."""
    line = "ValueError: `num_key_value_heads` must be divisible by `num_shards` (got `num_key_value_heads`: 8 and `num_shards`: 3"
    layout = [f for f in families.load() if f.name == "parallel layout" and f.kind == "not_divisible"]
    found = next(m for f in layout if (m := re.search(f.words, line, re.I)))
    assert (found["a"], found["b"]) == ("8", "3")
    report, _ = report_of(tmp_path, line + "\n")
    (f,) = report.findings
    assert f.code == "load.tp_invalid" and "8 attention heads; valid TP sizes: 1, 2" in f.evidence


@pytest.mark.parametrize(("line", "code", "family"), [
    # CUDA's cudaErrorLaunchFailure as Triton's driver wrapper prints it (triton third_party/nvidia/backend/driver.c)
    ("RuntimeError: Triton Error [CUDA]: unspecified launch failure", "load.gpu_fault", "GPU fault"),
    # the driver API's name for an uncorrectable ECC error (cuda.h CUDA_ERROR_ECC_UNCORRECTABLE)
    ("RuntimeError: CUDA error: CUDA_ERROR_ECC_UNCORRECTABLE", "load.gpu_fault", "GPU fault"),
    # transformers' require_version asks for a newer release (utils/versions.py)
    ("This model requires transformers>=4.51.0, please upgrade", "load.engine_outdated", "unsupported model"),
    ("Error: the model does not support GPTQ quantization on this device", "load.quantization_unsupported", "quantization"),
    # vLLM's Marlin kernels (quantization/utils/marlin_utils.py) for a bit width they lack
    ("ValueError: Marlin does not support weight_bits = 3. Only types = [4, 8] are supported.", "load.quantization_unsupported",
     "quantization"),
    # xformers ops/fmha/dispatch.py: no kernel for this GPU, dtype or build
    ("NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:", "load.cuda_mismatch", "CUDA/driver"),
    # CPython's import error for a model class the installed transformers does not export yet
    ("ImportError: cannot import name 'Qwen2VLForConditionalGeneration' from 'transformers' "
     "(/usr/local/lib/python3.10/site-packages/transformers/__init__.py)", "load.engine_outdated", "unsupported model"),
    # cudaErrorUnknown at CUDA's initialisation: a container or driver that does not hand over the GPU
    ("RuntimeError: CUDA error: unknown error", "load.gpu_not_visible", "GPU not visible"),
    # nvidia-smi for a GPU NVML lost (NVML_ERROR_GPU_IS_LOST / Unknown Error)
    ("Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error", "load.gpu_fault", "GPU fault"),
    # LMDeploy lmdeploy/pytorch/nn/embedding.py: the padded vocabulary over the TP ranks
    ("AssertionError: vocab_size_padded(151936) must be divisible by tp(3)", "load.tp_invalid", "parallel layout"),
    # Llama 3.1's rope_scaling under a transformers older than 4.43 (models/llama/configuration_llama.py)
    ("ValueError: `rope_scaling` must be a dictionary with with two fields, `type` and `factor`, got {'factor': 8.0, "
     "'rope_type': 'llama3'}", "load.engine_outdated", "unsupported model"),
])
def test_a_family_names_the_cause_no_template_knows(tmp_path: Path, line: str, code: str, family: str) -> None:
    assert any(re.search(f.words, line, re.I) for f in families.load() if f.name == family)
    report, path = report_of(tmp_path, line + "\n")
    assert report.findings[0].code == code
    assert report.findings[0].evidence[:1] == [f"{path}:1: {line}"]
    # the family, unless an engine's own template has been mined for the wording since (a template wins)
    tier = next(e for e in report.findings[0].evidence if e.startswith("recognised by: "))
    assert tier in (f"recognised by: family: {family}", "recognised by: template")


def test_where_an_exception_was_raised_names_the_cause_its_words_do_not(tmp_path: Path) -> None:
    """transformers' config registry raises a bare KeyError for a model_type it does not know
    (models/auto/configuration_auto.py, _LazyConfigMapping.__getitem__): the words name no cause, the
    frame does: the installed transformers predates the model."""
    report, path = report_of(tmp_path, "Traceback (most recent call last):\n"
                             '  File "/usr/local/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py", '
                             "line 710, in __getitem__\n"
                             "    raise KeyError(key)\n"
                             "KeyError: 'mistral'\n")
    f = report.findings[0]
    assert f.code == "load.engine_outdated" and f.evidence[0] == f"{path}:4: KeyError: 'mistral'"
    assert "recognised by: family: unsupported model" in f.evidence


def test_a_private_helper_a_newer_transformers_removed_is_no_outdated_engine(tmp_path: Path) -> None:
    """Remote model code importing a helper that transformers dropped (corpus/z074, Baichuan-M1): the
    model code is older than the library, the reverse of an outdated engine; no family claims it."""
    line = ("ImportError: cannot import name '_flash_supports_window_size' from 'transformers.modeling_flash_attention_utils' "
            "(/usr/local/lib/python3.12/dist-packages/transformers/modeling_flash_attention_utils.py)")
    report, _ = report_of(tmp_path, line + "\n")
    assert [f.code for f in report.findings] == ["load.unrecognized_failure"]


# --- a failure stated in prose with no family: unrecognised, on the side the text comes from -----------


def test_a_sentence_that_says_the_engine_crashed_is_a_load_failure(tmp_path: Path) -> None:
    report, path = report_of(tmp_path, "The vLLM server crashes after a few hours of serving requests\n")
    (f,) = report.findings
    assert (f.code, f.severity) == ("load.unrecognized_failure", "error")
    assert f.evidence == [f"{path}:1: The vLLM server crashes after a few hours of serving requests", "recognised by: unrecognised"]


@pytest.mark.parametrize("line", [
    "When calling the endpoint with the openai python client the request hangs and never returns",
    "Cline keeps failing with an error when I send a request to my local LM Studio server",
])
def test_a_sentence_told_from_the_clients_side_is_an_access_failure(tmp_path: Path, line: str) -> None:
    report, _ = report_of(tmp_path, line + "\n")
    assert [f.code for f in report.findings] == ["access.unrecognized_failure"]


def test_an_error_labelled_in_markdown_is_a_stated_failure(tmp_path: Path) -> None:
    report, path = report_of(tmp_path, "> **Error message:** frobnication of the widget registry did not complete\n")
    (f,) = report.findings
    assert f.code == "load.unrecognized_failure"
    assert f.evidence[0] == f"{path}:1: > **Error message:** frobnication of the widget registry did not complete"


@pytest.mark.parametrize(("line", "status"), [
    ("Error 500 from the server when I use the chat endpoint", 500),
    ('Getting "500 Internal Server Error" from the gateway on every request', 500),
])
def test_a_server_error_told_in_words_is_the_access_layers(tmp_path: Path, line: str, status: int) -> None:
    """http.HTTPStatus's reason phrases and a status in words: the server answered 5xx."""
    report, path = report_of(tmp_path, line + "\n")
    (f,) = report.findings
    assert f.code == "access.server_error" and f.evidence[0] == f"{path}:1: {line}"
    assert "recognised by: family: server error" in f.evidence


def test_the_pasted_error_is_the_root_not_the_sentence_about_it(tmp_path: Path) -> None:
    """The title says that it crashed; the pasted exception says what: the finding names it."""
    report, path = report_of(tmp_path, "The server crashes when I send a long prompt\nValueError: frobnicator width 3 exceeds 2\n")
    (f,) = report.findings
    assert f.code == "load.unrecognized_failure" and f.title.endswith("ValueError: frobnicator width 3 exceeds 2")


# --- nothing stated: incomplete, never a failure ---------------------------------------------------


@pytest.mark.parametrize("text", [
    "How do I set max-model-len for Llama 3 in vLLM? The docs say it's in the config but I can't find it.\n",
    "I want to serve Llama 3 70B on 4xA100, what tensor-parallel-size should I use?\n",
    "How do I configure --max-num-seqs? Is there a recommended value for an A100?\n",
    # counts and settings that name errors are no failure
    "Errors: none during the whole benchmark run, the numbers below are from the second pass\n",
    "error_rate: 0.0 over 1000 requests with the default settings\n",
    # advice, a fix and a possibility name a failure without stating one
    "To avoid OOM on a 24 GB card, lower --gpu-memory-utilization and --max-model-len\n",
    "This release fixes the hang when the server is started with tensor parallelism\n",
    "The server may crash when the prompt is longer than the context window, so keep prompts short\n",
])
def test_a_question_without_a_failure_gains_no_failure_finding(tmp_path: Path, text: str) -> None:
    report, _ = report_of(tmp_path, text)
    assert [f.code for f in report.findings] == ["doctor.input_incomplete"]


HEALTHY = sorted(
    [*REAL.glob("vllm-startup/*.txt"), *REAL.glob("nccl/*bench*.txt"), *REAL.glob("nccl/net-*.txt"),
     *REAL.glob("other-engines/sglang-*startup*.txt"), *REAL.glob("other-engines/tgi-2.2.0-*.txt"),
     *REAL.glob("other-engines/llama-server-b5614-*.txt"), *REAL.glob("other-engines/ollama-*-full-offload-*.txt"),
     *REAL.glob("ray/*.txt"), *REAL.glob("smi/*.txt"), *REAL.glob("k8s/*.txt"), *REAL.glob("topo/*.txt")]
)


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real is not here")
@pytest.mark.parametrize("path", [p for p in HEALTHY if not p.name.endswith(".source.txt")], ids=lambda p: p.name)
def test_healthy_real_logs_hold_no_family_or_prose_failure(path: Path) -> None:
    facts, _ = scan_lines(path.read_bytes().splitlines(keepends=True), path.name)
    fallback = [(e.kind, e.lines[0]) for e in facts.events
                if str(e.values.get("tier", "")).startswith("family") or e.values.get("cascade") == "a sentence about it"]
    assert fallback == []
