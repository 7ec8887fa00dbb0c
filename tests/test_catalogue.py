"""The message catalogue (doctor/data/catalogue/*.jsonl): every entry loads, its sample is read as
its kind with the right numbers, also when the paste damaged it (quotes gone, backticks eaten,
wrapped at 80 columns, behind a worker/rank/container prefix), and healthy real logs raise no
fatal catalogue event. Runs over every file, so the miners' files are checked the moment they land."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_doctor.logparse import catalogue as cat
from llm_doctor.logparse import events as ev
from llm_doctor.logparse.scan import scan_lines

KINDS = ev.KINDS
ENTRIES = cat.load(KINDS)
REAL = Path("/work/shared/real")

PREFIXES = {
    "vllm-worker": "(VllmWorker rank=0 pid=1234) ERROR 12-03 10:00:01 [multiproc_executor.py:123] ",
    "torch-rank": "[rank0]: ",
    "k8s-cri": "2024-12-03T10:00:01.123456789Z stderr F ",
}


def _events(lines: list[str]) -> list:
    facts, _ = scan_lines([(x + "\n").encode() for x in lines], "sample.log")
    return facts.events


def _kinds(lines: list[str]) -> set[str]:
    return {e.kind for e in _events(lines)}


def _wrap(text: str, width: int = 80) -> list[str]:
    """A terminal's hard wrap: cut every `width` characters, mid-word or not."""
    return [text[i : i + width] for i in range(0, len(text), width)]


def test_the_catalogue_has_entries_from_every_file() -> None:
    files = sorted(p.name for p in cat.DATA_DIR.glob("*.jsonl"))
    assert "vllm.jsonl" in files
    assert {e.where.split(":")[0] for e in ENTRIES} == set(files)
    assert len(ev.CATALOGUE_RULES) == len(ENTRIES)


def test_no_template_is_catalogued_twice() -> None:
    """Branches merge the catalogue by keeping both sides' lines (.gitattributes): a message mined twice,
    or a line changed on both sides, would come out twice and count twice in the coverage. The same words
    in two repositories (SGLang's copy of vLLM's quantization code) are two sources and stay."""
    seen: dict[tuple[str, str, str], str] = {}
    twice = []
    for e in ENTRIES:
        key = (e.template.casefold(), e.kind, e.source.split("@")[0])
        if key in seen:
            twice.append(f"{seen[key]} and {e.where}")
        seen.setdefault(key, e.where)
    assert not twice


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.where for e in ENTRIES])
def test_sample_matches_its_kind(entry: cat.Entry) -> None:
    found = ev.match(entry.sample)
    if entry.echo and found is not None and found[0].kind != entry.kind:
        # an echo's sample that quotes its cause ("could not load model (no success): ... CUDA out of memory") is read as
        # that cause (events.match: a wrapper never beats the cause on its own line), never as another echo
        assert not found[0].echo, f"{entry.where}: {found}"
        return
    assert found is not None and found[0].kind == entry.kind, f"{entry.where}: {found}"
    assert entry.kind in _kinds([entry.sample])
    # the numbers the template captures are numbers, and the sample's own
    for name in re.findall(r"\{(\w+):(?:int|num|size)\}", entry.template):
        m = re.compile(entry.regex, re.I).search(entry.sample)
        assert m is not None and m.group(name) is not None
        value = ev.to_number(m.group(name))
        assert isinstance(value, (int, float)), f"{entry.where}: {name}={value!r}"
        if found[0].source == entry.source:
            assert found[1][name] == value


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.where for e in ENTRIES])
def test_sample_survives_a_paste(entry: cat.Entry) -> None:
    variants = {
        "no quotes": [re.sub(r"['\"`]", "", entry.sample)],
        "no backticks": [entry.sample.replace("`", "")],
        "wrapped at 80": _wrap(entry.sample),
        **{name: [prefix + entry.sample] for name, prefix in PREFIXES.items()},
        "worker prefix, wrapped at 80": _wrap(PREFIXES["vllm-worker"] + entry.sample),
    }
    whole = ev.match(entry.sample)
    # an echo whose sample quotes a known cause is read as the cause (test_sample_matches_its_kind): that kind must survive
    kind = whole[0].kind if entry.echo and whole is not None and not whole[0].echo else entry.kind
    missed = {name: sorted(_kinds(lines)) for name, lines in variants.items() if kind not in _kinds(lines)}
    assert not missed, f"{entry.where} ({entry.kind}): {missed}"


def test_values_of_vllm_wordings() -> None:
    """The numbers the checks use, read from the wording the hand rules did not know."""
    cases = {
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has "
        "compute capability 7.5. You can use float16 instead": ("dtype_unsupported", {"need": 8.0, "cc": 7.5}),
        "ValueError: The quantization method bitsandbytes is not supported for the current GPU. Minimum capability: 70. "
        "Current capability: 52.": ("quant_unsupported", {"method": "bitsandbytes", "need": 70, "cc": 52}),
        "ValueError: There is no module or parameter named 'lm_head.input_scale' in LlamaForCausalLM": (
            "weight_key_unknown", {"param": "lm_head.input_scale"}),
    }
    for line, (kind, values) in cases.items():
        found = ev.match(line)
        assert found is not None and found[0].kind == kind
        assert {k: found[1][k] for k in values} == values
        assert found[1]["template_source"].startswith("vllm-project/vllm@")


def test_sglang_refusals_of_the_gpu_it_runs_on() -> None:
    """SGLang's own checks of the GPU (model_runner's sm75 floor, server_args' Blackwell-only TRTLLM backends) in the
    wordings people paste: the floor retyped with a space ("sm 75"), the MHA prefill variant of the backend check.
    The floor is the engines' shared "only supports sm NN and above" rule (events.py); the backend check SGLang's template."""
    cases = {
        "报错信息：SGlang only supports sm 75 and  above": "cuda_mismatch",
        "RuntimeError: SGLang only supports sm75 and above.": "cuda_mismatch",
        "ValueError: TRTLLM MHA backend for prefill is only supported on Blackwell GPUs (SM100). "
        "Please use a different prefill backend.": "config_invalid",
        "ValueError: TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). "
        "Please use a different backend.": "config_invalid",
    }
    for line, kind in cases.items():
        found = ev.match(line)
        assert found is not None and found[0].kind == kind, line
        if kind == "config_invalid":
            assert found[1]["template_source"].startswith("sgl-project/sglang@")


def test_a_template_beats_a_generic_hand_rule_of_another_kind(tmp_path: Path) -> None:
    """'Failed core proc(s): {'EngineCore_0': -9}' is a SIGKILL, not the generic echo it starts with."""
    found = ev.match("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_0': -9}")
    assert found is not None and found[0].kind == "killed"
    found = ev.match("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    assert found is not None and (found[0].kind, found[0].echo) == ("load_failed", True)


def test_a_hand_rule_with_more_values_keeps_its_line() -> None:
    """A hand rule of the same kind that reads more numbers wins over a shorter template."""
    line = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.74 GiB. GPU 3 has a total capacity of "
            "94.97 GiB of which 1.69 GiB is free.")
    found = ev.match(line)
    assert found is not None and found[0].kind == "cuda_oom" and not found[0].source
    assert found[1]["tried"] == 1.74 and found[1]["total"] == 94.97


@pytest.mark.parametrize("width", [80, 120])
def test_a_wrapped_message_is_one_event_with_its_numbers(width: int) -> None:
    """A hand rule's message cut by a terminal at its width, behind a worker prefix: re-joined."""
    line = ("(VllmWorker rank=0 pid=1234) ERROR 12-03 10:00:01 [worker.py:123] ValueError: The model's max seq len (32768) "
            "is larger than the maximum number of tokens that can be stored in KV cache (21248). Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
    events = [e for e in _events(_wrap(line, width)) if e.kind == "kv_cache_too_small"]
    assert len(events) == 1
    assert (events[0].values["max_seq_len"], events[0].values["kv_tokens"]) == (32768, 21248)
    assert events[0].line_no == 1


def test_a_line_after_a_short_one_is_not_joined() -> None:
    """Two records that each fit the width are two messages, never one."""
    lines = ["INFO 12-03 10:00:01 [core.py:1] Error in memory profiling.", "Initial free memory 1, current free memory 2."]
    assert "free_memory_low" not in _kinds(lines)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"log":"ValueError: There is no module or parameter named \'x.y\' in Z\\n","stream":"stderr","time":"t"}',
         "ValueError: There is no module or parameter named 'x.y' in Z"),
        ("2024-12-03T10:00:01.123456789Z stderr F RuntimeError: boom", "RuntimeError: boom"),
    ],
)
def test_container_log_wrappers_are_peeled(raw: str, message: str) -> None:
    from llm_doctor.logparse.lines import normalise

    assert normalise(1, raw).text == message


HEALTHY = sorted(
    [*REAL.glob("vllm-startup/*.txt"), *REAL.glob("nccl/*bench*.txt"), *REAL.glob("nccl/net-*-selected.txt"),
     *REAL.glob("nccl/net-*-detected-*.txt"), *REAL.glob("other-engines/sglang-*startup*.txt"),
     *REAL.glob("other-engines/tgi-2.2.0-*.txt"), *REAL.glob("other-engines/llama-server-b5614-*.txt"),
     *REAL.glob("other-engines/ollama-*-full-offload-*.txt"), *REAL.glob("ray/*.txt"), *REAL.glob("smi/*.txt")]
)


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real is not here")
@pytest.mark.parametrize("path", [p for p in HEALTHY if not p.name.endswith(".source.txt")], ids=lambda p: p.name)
def test_healthy_real_logs_raise_no_fatal_catalogue_event(path: Path) -> None:
    facts, _ = scan_lines(path.read_bytes().splitlines(keepends=True), path.name)
    fatal = [(e.kind, e.lines[0]) for e in facts.events if e.fatal and "template_source" in e.values]
    assert not fatal


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('{"kind": "no_such_kind", "template": "some long literal text here", "sample": "x", "source": "a/b@v1:c", "engine": "vllm"}',
         "unknown event kind 'no_such_kind'"),
        ('{"kind": "cuda_oom", "template": "some long literal text here", "sample": "x", "source": "a/b@v1:c"}',
         "missing or empty field(s): engine"),
        ('{"kind": "cuda_oom", "template": "some long literal {n:float} here", "sample": "x", "source": "a/b@v1:c", "engine": "vllm"}',
         "unknown type 'float'"),
        ('{"kind": "cuda_oom", "template": "some long literal {n here", "sample": "x", "source": "a/b@v1:c", "engine": "vllm"}',
         "unbalanced '{'"),
        ('{"kind": "cuda_oom", "template": "out of {a:int} memory", "sample": "out of 1 memory", "source": "a/b@v1:c", "engine": "vllm"}',
         "11 literal characters"),
        ('{"kind": "cuda_oom", "template": "some long literal text here", "sample": "other text", "source": "a/b@v1:c", "engine": "vllm"}',
         "the sample does not match"),
        ('{"kind": "cuda_oom", "template": "some long literal text here", "sample": "x", "source": "vllm", "engine": "vllm"}',
         "is not owner/repo@ref:path"),
        ('{"kind": "cuda_oom", "template": "some long literal text here", "sample": "x", "source": "a/b@v1:c", "engine": "vllm", "tier": 1}',
         "unknown field(s): tier"),
        ("// a comment", "not a JSON object"),
        # a template that opens with an `any` placeholder is tried from every position of a long line
        ('{"kind": "cuda_oom", "template": "{} is only available on GPU", "sample": "X is only available on GPU", '
         '"source": "a/b@v1:c", "engine": "vllm"}', "opens the template"),
    ],
)
def test_a_bad_entry_names_its_file_and_line(tmp_path: Path, line: str, error: str) -> None:
    good = json.dumps({"kind": "cuda_oom", "template": "some long literal text here", "sample": "some long literal text here",
                       "source": "a/b@v1:c", "engine": "vllm"})
    path = tmp_path / "bad.jsonl"
    path.write_text(good + "\n" + line + "\n")
    with pytest.raises(cat.CatalogueError) as info:
        cat.load(KINDS, [path])
    assert str(info.value).startswith("bad.jsonl:2: ") and error in str(info.value)


def test_templates_compile_tolerantly() -> None:
    regex, literal = cat.compile_template("argument `{flag:word}` of {n:int} is 'bad' {{x}}")
    compiled = re.compile(regex, re.I)
    m = compiled.search("ARGUMENT --foo of 1,024 is \"bad\" {x}")
    assert m is not None and (m.group("flag"), m.group("n")) == ("--foo", "1,024")
    assert compiled.search("argument `--foo` of 12 isbad {x}")  # a wrap that fell on the space
    assert literal == len("argumentofisbad{x}")


def test_catalogue_command_counts_templates_per_engine_kind_and_code() -> None:
    out = subprocess.run([sys.executable, "-m", "llm_doctor", "catalogue", "--format", "json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["templates"] == len(ENTRIES)
    assert data["per_engine"]["vllm"] == sum(e.engine == "vllm" for e in ENTRIES)
    # the kind -> code map comes from the checks' declarations: tp_gpus is read by load.parallel
    assert data["per_kind"]["tp_gpus"] == {"templates": sum(e.kind == "tp_gpus" for e in ENTRIES), "codes": ["load.tp_invalid"]}
    assert data["per_code"]["load.tp_invalid"] >= data["per_kind"]["tp_gpus"]["templates"]
    text = subprocess.run([sys.executable, "-m", "llm_doctor", "catalogue"], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0 and f"{len(ENTRIES)} templates" in text.stdout and "per finding code:" in text.stdout
