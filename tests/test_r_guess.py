"""The guess tier (doctor/logparse/worded.py, doctor/guessed.py): a text that reports a failure no rule, template or
sentence places is named from the symptom nouns of the whole text, as a finding of the tier "guess" ranked after
every other diagnosis and before the doctor's own state. Questions, advice, answers, healthy logs and tools' reports
stay quiet. The texts are the words of public threads (each names its thread)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.findings import GUESS, STATEMENT, Finding
from llm_doctor.logparse import worded
from llm_doctor.report import rank
from tests.analyze_json import analyze

ROOT = Path(__file__).resolve().parents[1]
HEALTHY = ROOT / "fixtures" / "logs" / "vllm-0.10.1.1-v1-a100-qwen2-7b-healthy-startup.log"

REPORTS = [
    # https://github.com/microsoft/semantic-kernel/issues/12293: .NET's HttpClient gives up after its 100 s default
    ("access.timeout", "TaskCanceledException",
     "do **not allow passing a custom `HttpClient`**, which makes it impossible to configure critical options such as `Timeout`.\n\n"
     "This is a limitation especially for local LLMs like `llama3.2:3b` or `mistral`, which may take longer than 100 seconds on "
     "first generation, leading to `TaskCanceledException`.\n"),
    # https://github.com/JuiceBoxxGames/utsuwa/pull/67: the website's HTML page where the API's JSON was expected
    ("access.response_invalid", "HTML",
     "Typing a slightly-wrong OpenAI-compatible base URL (e.g. `https://openai.com/v1/` instead of `https://api.openai.com/v1/`) "
     "used to produce a wall of raw HTML in the error toast, or worse, a silent empty reply when the site answered 200.\n"),
    # https://github.com/LostRuins/koboldcpp/pull/1168: nginx's proxy buffering holds the event stream
    ("access.streaming_broken", "X-Accel-Buffering",
     "I have an nginx reverse proxy serving a kobold remote API. When using SSE during my session, the response was displayed "
     "only when all tokens were generated. I figured that nginx needed the \"X-Accel-Buffering\" from the API server in order "
     "to disable any buffering.\n"),
    # https://github.com/ollama/ollama/issues/7669: the service started before the driver, zero GPUs found
    ("load.gpu_not_visible", "zero GPUs",
     "Only CPU is used after rebooting\n\nBased on those logs, it looks like we did not get an error back from the nvidia "
     "libraries, it simply said there were zero GPUs present.\n"),
    # https://github.com/openai/openai-dotnet/issues/123: the bare Ollama root as the endpoint
    ("access.base_url_invalid", "Endpoint",
     "I've tried the access a local ollama instance via openai-dotnet.\nI set the Endpoint in  OpenAIClientOptions to "
     "http://localhost:11434/\nand set the model name to an existing model.\nBut I Always a 404 error.\n"),
]


@pytest.mark.parametrize(("code", "word", "text"), REPORTS, ids=[r[0] for r in REPORTS])
def test_a_report_no_rule_places_is_named_from_its_words(tmp_path: Path, code: str, word: str, text: str) -> None:
    path = tmp_path / "issue.md"
    path.write_text(text)
    report = analyze(path)
    first = report["findings"][0]
    assert (first["code"], first["tier"], first["severity"]) == (code, GUESS, "warn")
    assert any(word in line for line in first["evidence"] if line.startswith("the words it rests on: "))
    assert any(line.startswith("named from the words of the report, no error line") for line in first["evidence"])
    # what else the report says is that a failure was stated (a sentence no rule places) or that the run's output is not
    # in the input: the guess ranks before both, never instead of them
    rest = [f["code"] for f in report["findings"]][1:]
    assert rest and set(rest) <= {"doctor.input_incomplete", "load.unrecognized_failure", "access.unrecognized_failure"}


def test_the_phase_beside_an_oom_picks_load_or_serving() -> None:
    loading = worded.guesses("t", "The server crashes: OOM when loading the 70B weights on two GPUs.\n")
    serving = worded.guesses("t", "It crashes with OOM after a few hours of serving long prompts.\n")
    assert loading[0].code == "load.weights_oom" and serving[0].code == "load.runtime_oom"


@pytest.mark.parametrize("text", [
    "How do I set the DNS server for the container?\n",  # a question
    "You should try --enforce-eager to avoid the OOM.\n",  # advice
    "The solution is to set REQUESTS_CA_BUNDLE to the signing CA.\n",  # the answer
    "Never mind, the certificate was mine. No errors now with SSL.\n",  # a failure denied
    "Add support for Anthropic's /v1/messages next to OpenAI's /chat/completions\n",  # a change's title
])
def test_questions_advice_answers_and_changes_guess_nothing(text: str) -> None:
    assert worded.guesses("t", text) == []


def test_a_launch_commands_flags_are_settings_not_symptoms() -> None:
    text = ("docker run --shm-size 1g -p 8080:80 ghcr.io/huggingface/text-generation-inference:2.0.3 --trust-remote-code\n"
            "It fails to start.\n")
    assert worded.guesses("t", text) == []


def test_a_healthy_log_and_a_tools_report_stay_quiet(tmp_path: Path) -> None:
    assert analyze(HEALTHY)["findings"] == []
    smi = tmp_path / "nvidia-smi.txt"  # nvidia-smi -q rows: `HW Slowdown : Not Active` is no person's report of a slowdown
    smi.write_text("==============NVSMI LOG==============\n\nTimestamp                                 : Mon Jan  1 00:00:00 2024\n"
                   "Driver Version                            : 535.104.05\nCUDA Version                              : 12.2\n\n"
                   "Attached GPUs                             : 1\nGPU 00000000:01:00.0\n    Product Name                          : NVIDIA A10\n"
                   "    Clocks Event Reasons\n        Idle                              : Active\n"
                   "        HW Slowdown                       : Not Active\n        HW Power Brake Slowdown           : N/A\n")
    assert not [f for f in analyze(smi)["findings"] if f.get("tier") == GUESS]


def test_a_finding_a_rule_makes_leaves_no_guess(tmp_path: Path) -> None:
    path = tmp_path / "issue.md"  # the sentence tier reads this one: the guess is not repeated below it
    path.write_text("The request fails with getaddrinfo ENOTFOUND api.example.com from inside the container.\n")
    tiers = [f.get("tier", "") for f in analyze(path)["findings"]]
    assert GUESS not in tiers and tiers[0] in ("", STATEMENT)


def test_a_guess_ranks_after_every_diagnosis_and_before_the_doctors_own_state() -> None:
    incomplete = Finding("doctor.input_incomplete", "not read")
    guess = Finding("access.timeout", "guessed", severity="warn", tier=GUESS)
    said = Finding("access.dns_failed", "said", tier=STATEMENT)
    unplaced = Finding("load.unrecognized_failure", "unplaced", severity="warn")
    note = Finding("perf.prefix_caching_off", "a note", severity="info")
    assert [f.title for f in rank([incomplete, guess, note, said, unplaced])] == ["said", "unplaced", "a note", "guessed", "not read"]


def test_a_sentence_only_failure_is_explained_by_the_guess(tmp_path: Path) -> None:
    # a person's sentence the failure reader takes for an unplaced failure ("But I always get a 404 error"): the guess
    # names its cause and ranks before it (the sentence names the status a client got: the unplaced failure is the access layer's)
    path = tmp_path / "issue.md"
    path.write_text("I set the Endpoint in OpenAIClientOptions to http://localhost:11434/\nBut I always get a 404 error.\n")
    codes = [f["code"] for f in analyze(path)["findings"]]
    assert codes[:2] == ["access.base_url_invalid", "access.unrecognized_failure"]
