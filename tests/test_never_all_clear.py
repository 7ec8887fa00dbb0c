"""Never a false all-clear (issue #8): a failure no rule recognises, a fatal event no check judges,
input that was cut or cannot be read, a check that crashes, an engine that never started: each is
a finding with its status and exit code, through the CLI. Synthetic logs here take the exact shape
of the engine's output (vLLM V1's EngineCore traceback) with an exception class nobody has seen."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_doctor.collect.files import load_paths
from llm_doctor.collect.logs import TAIL_BYTES, LogCollector
from llm_doctor.engine import CheckSpec, Deadline, load_checks, run_checks, select
from llm_doctor.facts import Facts
from llm_doctor.logparse import failures
from llm_doctor.logparse.events import RULES
from llm_doctor.logparse.scan import scan_lines
from llm_doctor.report import build_report

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "fixtures" / "logs"
KV_LOG = LOGS / "vllm-0.4.1-a10g-mistral7b-kv-cache-insufficient.log"

V1_UNKNOWN = """\
(APIServer pid=2961) INFO 08-20 06:02:31 [api_server.py:1805] vLLM API server version 0.10.1.1
(EngineCore_0 pid=3190) INFO 08-20 06:02:44 [core.py:636] Waiting for init message from front-end.
(EngineCore_0 pid=3190) ERROR 08-20 06:03:02 [core.py:700] EngineCore failed to start.
(EngineCore_0 pid=3190) ERROR 08-20 06:03:02 [core.py:700] Traceback (most recent call last):
(EngineCore_0 pid=3190) ERROR 08-20 06:03:02 [core.py:700]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 691, in run_engine_core
(EngineCore_0 pid=3190) ERROR 08-20 06:03:02 [core.py:700]     engine_core = EngineCoreProc(*args, **kwargs)
(EngineCore_0 pid=3190) ERROR 08-20 06:03:02 [core.py:700]                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
(EngineCore_0 pid=3190) ERROR 08-20 06:03:02 [core.py:700]   File "/usr/local/lib/python3.12/dist-packages/vllm/plugins/frob.py", line 42, in load
(EngineCore_0 pid=3190) ERROR 08-20 06:03:02 [core.py:700]     raise FrobnicationFault(f"widget count {n} exceeds {limit}")
(EngineCore_0 pid=3190) ERROR 08-20 06:03:02 [core.py:700] frob.FrobnicationFault: widget count 3 exceeds 2
(APIServer pid=2961) Traceback (most recent call last):
(APIServer pid=2961)   File "/usr/local/bin/vllm", line 10, in <module>
(APIServer pid=2961)     sys.exit(main())
(APIServer pid=2961) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([sys.executable, "-m", "llm_doctor", *args], input=stdin, capture_output=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc


def analyze_json(*args: str, stdin: bytes | None = None) -> tuple[int, dict]:
    proc = cli("analyze", *args, "--format", "json", stdin=stdin)
    return proc.returncode, json.loads(proc.stdout)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_an_unknown_exception_in_a_v1_traceback_is_an_error_finding(tmp_path: Path) -> None:
    rc, report = analyze_json(write(tmp_path, "engine.log", V1_UNKNOWN))
    assert (rc, report["status"]) == (1, "error")
    (f,) = report["findings"]
    assert (f["code"], f["severity"], f["check"]) == ("load.unrecognized_failure", "error", "doctor.coverage")
    assert "frob.FrobnicationFault: widget count 3 exceeds 2" in f["title"] or "FrobnicationFault" in " ".join(f["evidence"])
    text = "\n".join(f["evidence"])
    assert "engine.log:10: (EngineCore_0 pid=3190) ERROR 08-20 06:03:02 [core.py:700] frob.FrobnicationFault: widget count 3 exceeds 2" in text
    assert 'raised at: File "/usr/local/lib/python3.12/dist-packages/vllm/plugins/frob.py", line 42, in load' in text
    assert {"summary": "Search vllm's issues for this exact error (a known bug usually has a fix or workaround)",
            "command": 'gh search issues --repo vllm-project/vllm "frob.FrobnicationFault: widget count exceeds"'} in f["fixes"]
    plain = cli("analyze", write(tmp_path, "again.log", V1_UNKNOWN)).stdout.decode()
    assert "No problems found" not in plain and "status: error" in plain


def test_a_fatal_event_no_check_turns_into_a_finding_is_reported(tmp_path: Path) -> None:
    log = write(tmp_path, "worker.log", "(VllmWorker rank=1 pid=812) ERROR 06-13 15:32:09 [multiproc_executor.py:527] "
                                        "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    rc, report = analyze_json(log)
    assert rc == 1
    (f,) = report["findings"]
    assert f["code"] == "load.unrecognized_failure" and f["severity"] == "error"
    assert "`illegal_memory_access` is read by load.gpu_fault pass, which found no known cause for it" in f["evidence"]
    assert {"summary": "Rerun with synchronous CUDA calls so the failing kernel is the one reported",
            "command": "CUDA_LAUNCH_BLOCKING=1"} in f["fixes"]


def test_an_unjudged_failure_ranks_after_the_recognised_cause(tmp_path: Path) -> None:
    log = write(tmp_path, "both.log", STAT.decode() + (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB "
        "of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.98 GiB memory in use.\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"))
    _, report = analyze_json(log)
    assert [f["code"] for f in report["findings"]][:2] == ["load.runtime_oom", "load.unrecognized_failure"]


def test_a_missing_path_among_two_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    proc = cli("analyze", str(KV_LOG), str(tmp_path / "gone.log"))
    assert proc.returncode == 2
    assert f"{tmp_path / 'gone.log'}: no such file" in proc.stderr.decode()
    proc = cli("run", "--only", "load", "--log", str(tmp_path / "gone.log"))
    assert proc.returncode == 2 and "gone.log: no such file" in proc.stderr.decode()


def test_a_folder_with_nothing_to_read_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("nothing here")
    proc = cli("analyze", str(tmp_path))
    assert proc.returncode == 2 and "no file to read in this folder" in proc.stderr.decode()


def test_unknown_only_or_skip_is_a_usage_error() -> None:
    proc = cli("analyze", str(KV_LOG), "--only", "bogus")
    assert proc.returncode == 2 and "'bogus' is neither a layer" in proc.stderr.decode()
    proc = cli("analyze", str(KV_LOG), "--skip", "load.kv_cach")
    assert proc.returncode == 2 and "did you mean load.kv_cache" in proc.stderr.decode()


def test_gzip_on_stdin_is_read() -> None:
    rc, report = analyze_json("-", stdin=gzip.compress(KV_LOG.read_bytes()))
    assert rc == 1 and report["findings"][0]["code"] == "load.kv_cache_insufficient"


def test_binary_on_stdin_is_a_usage_error() -> None:
    proc = cli("analyze", "-", stdin=bytes(range(1, 32)) * 2000)
    assert proc.returncode == 2 and "<stdin>: binary data" in proc.stderr.decode()


def test_nul_bytes_inside_a_log_do_not_make_it_binary(tmp_path: Path) -> None:
    path = tmp_path / "holes.log"
    path.write_bytes(b"\x00" * 8192 + KV_LOG.read_bytes())
    rc, report = analyze_json(str(path))
    assert rc == 1 and report["findings"][0]["code"] == "load.kv_cache_insufficient"


STAT = (b"INFO 04-16 10:32:27 [loggers.py:87] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: "
        b"120.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.0%, Prefix cache hit rate: 0.0%\n")
BAD_REQUEST = b"(APIServer pid=1) ERROR 04-16 10:32:27 [serving_chat.py:200] Error in preprocessing prompt inputs: request %d failed\n"
OOM = (b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB "
       b"of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.98 GiB memory in use.\n")


def big_log(path: Path, head_lines: int) -> Path:
    """A server log with a slow-to-read head (lines the parser must read), a tail of stat lines
    longer than TAIL_BYTES, and the crash on its last line."""
    with path.open("wb") as fh:
        for i in range(head_lines):
            fh.write(BAD_REQUEST % i)
        fh.write(STAT * (TAIL_BYTES // len(STAT) + 1000))
        fh.write(OOM)
    return path


class Ticks(Deadline):
    """A deadline that expires after `ticks` looks at it: where the scan is cut does not depend on
    how fast this machine reads."""

    def __init__(self, ticks: int) -> None:
        super().__init__(3600)
        self.ticks = ticks

    def expired(self) -> bool:
        self.ticks -= 1
        return self.ticks < 0


def test_a_cut_scan_still_finds_the_crash_at_the_end(tmp_path: Path) -> None:
    path = big_log(tmp_path / "server.log", 20000)
    facts = Facts()
    collector = LogCollector(facts, Ticks(18))  # the tail's 17 blocks, then one look into the head
    collector.add_path(str(path))
    logs = collector.finish()
    (gap,) = facts.gaps
    assert gap.reason.startswith("cut by the deadline: read the first ") and "MiB in between were not read" in gap.reason
    assert gap.bytes_total == path.stat().st_size
    assert "cuda_oom" in {e.kind for e in logs.events}
    report = build_report(run_checks(facts, select(load_checks())), facts)
    assert report.status == "incomplete" and report.exit_code("error") == 1 and report.exit_code("never") == 0
    codes = [f.code for f in report.findings]
    assert codes[0] == "load.runtime_oom" and "doctor.input_incomplete" in codes
    (cut,) = [f for f in report.findings if f.code == "doctor.input_incomplete"]
    assert any(re.fullmatch(r"--deadline \d+", x.command or "") for x in cut.fixes)


def test_a_big_log_under_a_short_deadline_through_the_cli(tmp_path: Path) -> None:
    """A log bigger than the tail read first, through the CLI. The deadline leaves room for the tail
    (about 2 s of CPU) on a busy machine, so the crash at its end is found however fast this machine
    is; whether the head is cut too depends on the machine, and a cut is said, with the deadline that
    would read it all. Where exactly a scan is cut is tested without the clock (Ticks, above)."""
    path = big_log(tmp_path / "server.log", 5000)
    rc, report = analyze_json(str(path), "--deadline", "60")
    assert rc == 1 and report["findings"][0]["code"] == "load.runtime_oom"
    if report["status"] == "incomplete":
        (gap,) = [f for f in report["findings"] if f["code"] == "doctor.input_incomplete"]
        assert any(re.fullmatch(r"--deadline \d+", x["command"] or "") for x in gap["fixes"])
    else:
        assert report["status"] == "error"


def test_a_thousand_preemptions_then_an_oom(tmp_path: Path) -> None:
    warn = "WARNING 05-03 18:07:25 [scheduler.py:1560] Sequence group %d is preempted by PreemptionMode.RECOMPUTE mode " \
           "because there is not enough KV cache space. total_num_cumulative_preemption=%d\n"
    log = write(tmp_path, "server.log", "".join(warn % (i, i + 1) for i in range(1000)) + OOM.decode())
    rc, report = analyze_json(log)
    assert rc == 1 and report["findings"][0]["code"] == "load.runtime_oom"
    preempted = [e for e in report["facts"]["logs"]["events"] if e["kind"] == "preemption"]
    assert sum(e["count"] for e in preempted) == 1000
    assert len(report["facts"]["logs"]["events"]) <= 10  # one template, a few variants: memory stays flat


def test_a_check_that_raises_fails_the_report() -> None:
    def boom(facts: Facts) -> list:
        raise KeyError("gpu_total_gib")

    specs = [CheckSpec("load.boom", "load", boom, codes=("load.weights_oom",))]
    report = build_report(run_checks(Facts(), specs), Facts())
    (f,) = report.findings
    assert f.code == "doctor.check_crashed" and f.evidence[0] == "KeyError: 'gpu_total_gib'"
    assert report.status == "error" and report.exit_code("error") == 1 and report.exit_code("warn") == 1


def test_perf_checks_of_a_crashed_engine_are_blocked() -> None:
    rc, report = analyze_json(str(LOGS / "sglang-a10g-prefill-oom.log"))
    status = {c["id"]: (c["status"], c["detail"]) for c in report["checks"]}
    for check_id in ("perf.batching", "perf.engine_log"):
        assert status[check_id][0] == "blocked", check_id
        assert status[check_id][1].startswith("blocked: the engine log shows it failed (cuda_oom at ")


def test_checks_lists_what_each_check_reads() -> None:
    out = cli("checks").stdout.decode()
    assert "reads: logs; events cuda_oom, ggml_alloc_failed" in out
    assert "reads: gpus; a running engine" in out  # perf.gpu_utilization
    assert "doctor.coverage" in out


def test_every_event_kind_the_grammar_emits_is_judged() -> None:
    declared = {kind for spec in load_checks().values() for kind in spec.events}
    emitted = {rule.kind for rule in RULES}
    assert emitted <= declared, sorted(emitted - declared)
    assert not set(failures.KINDS) & declared  # the engine's coverage pass judges these, after every check


FAILURE_LINE = re.compile(r"Traceback \(most recent call last\)|^(?:\S+ )?(?:\([^)]*\) )?ERROR \d\d-\d\d |\bERROR text_generation|"
                          r"level=ERROR|\[ERROR\]", re.M)
LOG_SETS = [ROOT / "fixtures" / "logs", ROOT.parent / "shared" / "corpus", ROOT / "corpus"]


def failing_logs() -> list[Path]:
    out = []
    for folder in LOG_SETS:
        for path in sorted(folder.glob("*.log")) if folder.exists() else []:
            if FAILURE_LINE.search(path.read_bytes().decode("utf-8", "replace")):
                out.append(path)
    return out


def test_no_log_with_a_traceback_or_an_error_line_is_ok() -> None:
    logs = failing_logs()
    assert len(logs) >= 50
    ok = []
    for path in logs:
        facts = load_paths([str(path)], Deadline(60))
        report = build_report(run_checks(facts, select(load_checks()), Deadline(60)), facts)
        if report.status == "ok":
            ok.append(path.name)
    assert ok == []


@pytest.mark.parametrize("fail_on,rc", [("error", 1), ("warn", 1), ("never", 0)])
def test_incomplete_fails_the_gate_unless_told_never(tmp_path: Path, fail_on: str, rc: int) -> None:
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "engine.log").write_bytes(KV_LOG.read_bytes())
    code, report = analyze_json(str(tmp_path), "--fail-on", fail_on)
    assert report["status"] == "incomplete" and code == rc


def test_a_traceback_cut_before_its_exception_line_is_a_failure(tmp_path: Path) -> None:
    """A paste that stops inside a traceback (lmdeploy#1008's log ends at a frame) names no error,
    but a traceback is a failure: never 'No problems found'."""
    log = tmp_path / "cut.log"
    log.write_text("Traceback (most recent call last):\n"
                   '  File "/envs/lmdeploy/bin/lmdeploy", line 8, in <module>\n'
                   "    sys.exit(run())\n"
                   '  File "/envs/lmdeploy/lib/python3.8/site-packages/lmdeploy/cli/entrypoint.py", line 18, in run\n'
                   "    args.run(args)\n")
    code, report = analyze_json(str(log))
    top = report["findings"][0]
    assert code == 1 and top["code"] == "load.unrecognized_failure"
    assert top["title"].endswith("a traceback the input cuts before its exception line")
    assert top["fixes"][0]["command"] == f"tail -n 60 {log}"


# --- the fallback: a failure in the shape its program prints, that no rule names ----------------
# Each line is the program's own format (where it comes from beside it); none is a wording a rule
# knows, so only the shape says it failed. The report must say so, quoting the line and its place.

CLIENT_SHAPES = [
    # curl -i: the status line of the answer
    "HTTP/1.1 422 Unprocessable Entity",
    # llama.cpp tools/server/utils.hpp format_error_response: {"code", "message", "type": "<x>_error"}
    '{"code": 400, "message": "Pooling type \'none\' is not OAI compatible. Please use a different pooling type", "type": "invalid_request_error"}',
    # a failure that names the client's own setting (corpus/i213.log:2, mailflow's private-host guard on its base URL)
    "Error:  Base URL: Host cannot be a private or reserved IP address",
    # axios lib/adapters/xhr.js in a browser: AxiosError('Network Error'), as String(err) prints it
    "Error: Network Error",
    # Claude Code's "API Error: 400" as other tools case and bracket it (the Copilot OAI-compatible extension,
    # https://github.com/JohnnyZ93/oai-compatible-copilot/issues/161): was "No problems found"
    'Anthropic API error: [422] Unprocessable Content {"detail":[{"type":"missing","loc":["body","max_tokens"],"msg":"Field required"}]}',
]


@pytest.mark.parametrize("line", CLIENT_SHAPES)
def test_a_client_failure_no_rule_names_is_an_access_finding(tmp_path: Path, line: str) -> None:
    log = write(tmp_path, "client.log", line + "\n")
    rc, report = analyze_json(log)
    assert (rc, report["status"]) == (1, "error")
    (f,) = report["findings"]
    assert (f["code"], f["severity"]) == ("access.unrecognized_failure", "error")
    assert f["evidence"] == [f"{log}:1: {line}", "recognised by: unrecognised"]
    assert f["fixes"][0]["summary"] == "Search for this exact error message"


# a client tool's tag before its message (Cline's `[openai]`, train log g177: "[openai] 500500 Unexpected token '<' ..."), after
# a line the doctor reads (so the input is not "nothing readable"): the shape still says the client failed, never ok
TAGGED_SHAPES = [
    *CLIENT_SHAPES,
    # Go net/http client.go: *url.Error's `%s %q: %s` (method, URL, cause)
    'Post "http://localhost:11434/api/chat": EOF',
    # a status and its reason phrase opening the line (train log x015:1, the body on the lines after it)
    "400 Bad Request {",
]


@pytest.mark.parametrize("line", TAGGED_SHAPES)
def test_a_tagged_client_failure_after_a_healthy_line_is_not_ok(tmp_path: Path, line: str) -> None:
    log = write(tmp_path, "client.log", f"INFO:     Application startup complete.\n[openai] {line}\n")
    rc, report = analyze_json(log)
    assert (rc, report["status"]) == (1, "error")
    (f,) = report["findings"]
    assert f["code"] == "access.unrecognized_failure"
    assert f"{log}:2: [openai] {line}" in f["evidence"]


# Output in which no engine is seen, whose failure no rule names: what printed it says whose failure it is. Each
# exception here is one nobody has a rule for; only the runtime, the frames or the answer's shape place it.
CLIENT_OUTPUTS = {
    # node's stack (no engine this tool reads runs on node): a client library parsing what it was sent
    "node": "SyntaxError: Frobnicated token in JSON at position 12\n    at JSON.parse (<anonymous>)\n"
            "    at Client.chat (file:///app/src/client.js:184:24)\n"
            "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n\nNode.js v20.10.0\n",
    # the 0.x openai SDK's own frame, on Windows (backslashes), under a user's script whose name says vllm
    "sdk frame": "Traceback (most recent call last):\n"
                 '  File "D:\\work\\call_vllm.py", line 25, in <module>\n    r = openai.Embedding.create(model=m, input="x")\n'
                 '  File "C:\\env\\lib\\site-packages\\openai\\api_requestor.py", line 403, in handle_error_response\n'
                 '    error_data = resp["frob"]\nFrobError: \'frob\'\n',
    # the error object of an API's answer (google.rpc.Status as Gemini sends it), pasted alone
    "answer body": '{\n  "error": {\n    "code": 400,\n    "message": "Frobnication is not available for the API use.",\n'
                   '    "status": "FAILED_PRECONDITION"\n  }\n}\n',
}


@pytest.mark.parametrize("name", CLIENT_OUTPUTS)
def test_a_failure_printed_by_a_client_is_the_access_layers(tmp_path: Path, name: str) -> None:
    rc, report = analyze_json(write(tmp_path, "out.log", CLIENT_OUTPUTS[name]))
    assert (rc, report["status"]) == (1, "error")
    assert report["findings"][0]["code"] == "access.unrecognized_failure"


def test_an_engines_own_openai_package_is_no_client(tmp_path: Path) -> None:
    """vLLM's server code lives under vllm/entrypoints/openai/: a traceback raised there is the engine's, even pasted
    without the engine's start-up."""
    log = write(tmp_path, "engine.log", "Traceback (most recent call last):\n"
                '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", line 9, in run\n'
                "    frob()\nFrobError: widget count 3 exceeds 2\n")
    rc, report = analyze_json(log)
    assert report["findings"][0]["code"] == "load.unrecognized_failure"


def test_an_answer_a_rule_reads_as_harmless_is_the_clients_failure(tmp_path: Path) -> None:
    """curl -v's status line of the answer (`< HTTP/2 409`): the rule reads it as an HTTP answer,
    harmless by itself in a server's access log, but in a client's output it is the failure."""
    log = write(tmp_path, "curl.log", "< HTTP/2 409\n")
    rc, report = analyze_json(log)
    assert (rc, report["status"]) == (1, "error")
    (f,) = report["findings"]
    assert (f["code"], f["severity"]) == ("access.unrecognized_failure", "error")
    assert f["evidence"] == [f"{log}:1: < HTTP/2 409", "recognised by: template"]
    # the same status in a server's access log is someone's request, not the server failing
    access = write(tmp_path, "access.log", 'INFO:     127.0.0.1:0 - "GET /favicon.ico HTTP/1.1" 409 Conflict\n'
                                           "INFO:     Application startup complete.\n")
    rc, report = analyze_json(access)
    assert (rc, report["status"]) == (0, "ok")


ENGINE_SHAPES = [
    # JVM: java.lang.Throwable#printStackTrace prints a chain's cause as `Caused by: <class>: <message>`
    # (langchain4j#1425's shape; OkHttp's `InterruptedIOException: timeout` itself is a catalogue template now)
    ("Caused by: java.lang.IllegalArgumentException: unexpected url", "exception"),
    # JVM: the default uncaught-exception handler: `Exception in thread "<name>" <class>: <message>`
    ('Exception in thread "main" java.lang.IllegalStateException: widget registry is closed', "exception"),
]


@pytest.mark.parametrize(("line", "kind"), ENGINE_SHAPES)
def test_a_crash_shape_no_rule_names_is_a_load_finding(tmp_path: Path, line: str, kind: str) -> None:
    log = write(tmp_path, "engine.log", line + "\n")
    facts = load_paths([log], Deadline(60))
    assert [e.kind for e in facts.logs.events] == [kind]  # type: ignore[union-attr]
    rc, report = analyze_json(log)
    assert (rc, report["status"]) == (1, "error")
    (f,) = report["findings"]
    assert (f["code"], f["severity"]) == ("load.unrecognized_failure", "error")
    assert f["evidence"][0].startswith(f"{log}:1: ") and f["evidence"][-1] == "recognised by: unrecognised"


def test_a_sigkill_with_nothing_else_failing_is_host_oom(tmp_path: Path) -> None:
    """bash reports a child the kernel killed with SIGKILL (bash's jobs.c, the signal's strsignal()
    name): the kernel's OOM killer leaves no line in the program's own output, so with no other
    failure in the log the keyword family `killed` hands it to load.host_memory."""
    log = write(tmp_path, "engine.log", "bash: line 1:  4242 Killed                  python3 -m sglang.launch_server --model-path /models/x\n")
    rc, report = analyze_json(log)
    assert (rc, [f["code"] for f in report["findings"]]) == (1, ["load.host_oom"])
    assert report["findings"][0]["evidence"][-1] == "recognised by: family: killed"


def test_an_error_pasted_under_a_launch_command_is_not_dropped(tmp_path: Path) -> None:
    """A short paste that starts with the launch command is read as a command line; the error
    object pasted under it is a failure all the same (ggml-org/llama.cpp#13566)."""
    log = write(tmp_path, "paste.log", "`./build/bin/llama-server -m ../../_models/SmolVLM-500M-Instruct-Q8_0.gguf`\n"
                                       "Got this error:\n"
                                       'got exception: {"code":500,"message":"image input is not supported by this server",'
                                       '"type":"server_error"}\n')
    rc, report = analyze_json(log)
    assert (rc, report["status"]) == (1, "error")
    (f,) = report["findings"]
    assert f["code"] == "access.server_error"  # llama-server's own error body (its format_error_response)
    assert f["evidence"][0] == (f'{log}:3: got exception: {{"code":500,"message":"image input is not supported by this server",'
                                f'"type":"server_error"}}')


# --- ... and healthy lines that hold error words stay quiet -------------------------------------

HEALTHY_LINES = [
    # SGLang goes on with its default kernel config (shared/real/other-engines/sglang-0.4.3-deepseek-r1-tp8-startup-decode-batches.txt:146)
    "[2025-03-07 09:25:33 TP4] Using default MoE config. Performance might be sub-optimal! Config file not found at "
    "/root/miniconda3/envs/deepseekr1/lib/python3.12/site-packages/sglang/srt/layers/moe/fused_moe_triton/configs/"
    "E=256,N=128,device_name=NVIDIA_H800,dtype=fp8_w8a8,block_shape=[128, 128].json",
    # transformers' deprecation notice (shared/real/vllm-startup/v0.10.1.1-v1-1xA100-0.25gmu.txt:6)
    "(APIServer pid=1671) `torch_dtype` is deprecated! Use `dtype` instead!",
    # vLLM's warning with "failed" in it (shared/real/vllm-startup/v0.10.1.1-v1-tp2-a100-0.25gmu.txt:23)
    "(VllmWorker TP0 pid=1430) WARNING 09-03 00:36:44 [custom_all_reduce.py:147] Custom allreduce is disabled because your "
    "platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.",
    # torch c10d's C10D_WARNING while the store's server comes up (torch/csrc/distributed/c10d/socket.cpp; vllm-project/vllm#3771)
    "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot assign requested address).",
    # ... in torch >= 2.4's glog header, behind torchrun's rank prefix
    "[rank1]:[W1015 10:00:00.123456 123 torch/csrc/distributed/c10d/socket.cpp:697] [c10d] The client socket has failed to "
    "connect to [localhost]:29500 (errno: 99 - Cannot assign requested address).",
    # NCCL's INFO lines name what it did not find on its way to a transport (nccl src/net.cc, src/misc/ibvwrap.cc)
    "node1:1234:1234 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v6 symbol.",
    "node1:1234:1234 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared "
    "object file: No such file or directory",
    "node1:1234:1234 [0] NCCL INFO Failed to open libibverbs.so[.1]",
    # openai-python's retry notice (src/openai/_base_client.py: "Retrying request to %s in %f seconds")
    "Retrying request to /chat/completions in 0.482 seconds",
    # a count of zero errors
    "# Out of bounds values : 0 OK",
    "this is a significant load on the GPU",
]


@pytest.mark.parametrize("line", HEALTHY_LINES)
def test_a_healthy_line_with_error_words_is_no_failure(line: str) -> None:
    facts, _ = scan_lines([line.encode() + b"\n"], "healthy.log")
    assert [(e.kind, e.lines[0]) for e in facts.events if e.fatal] == []


# vLLM retries a lookup and goes on (shared/real/vllm-startup/v0.10.1.1-v1-tp4-ray-4nodes-gptoss120b-ansi.txt:6)
RETRY = ("(APIServer pid=1009) ERROR 09-10 23:26:29 [config.py:130] Error retrieving safetensors: 'gpt-oss-120b' is not a "
         "safetensors repo. Couldn't find 'model.safetensors.index.json' or 'model.safetensors' files., retrying 1 of 2")


def test_a_retry_the_engine_got_past_is_no_failure(tmp_path: Path) -> None:
    """An ERROR line that says it retries, after which the server came up: the retry worked. Without
    the server coming up it is the failure it may be."""
    rc, report = analyze_json(write(tmp_path, "stuck.log", RETRY + "\n"))
    assert (rc, [f["code"] for f in report["findings"]]) == (1, ["load.unrecognized_failure"])
    log = write(tmp_path, "engine.log", RETRY + "\n"
                "(APIServer pid=1009) INFO 09-10 23:50:30 [launcher.py:44] Route: /v1/models, Methods: GET\n"
                "(APIServer pid=1009) INFO:     Application startup complete.\n")
    rc, report = analyze_json(log)
    assert (rc, report["status"], report["findings"]) == (0, "ok", [])


# --- a text of which nothing was read is not judged: never "No problems found" on it ------------


def test_a_text_with_nothing_the_doctor_reads_is_incomplete(tmp_path: Path) -> None:
    """Notes pasted instead of a log: no line is a log record, an error, a stat line, a launch command
    or a perf problem stated in words (those are read: tests/test_perf_prose.py), so nothing was judged
    and "ok" would claim it was."""
    notes = write(tmp_path, "notes.txt", "`start.sh` is the script we deploy the model with on the two nodes;\n"
                                         "the team uses it for code review — including identical system prompts and multi-turn history.\n")
    rc, report = analyze_json(notes)
    assert (rc, report["status"]) == (1, "incomplete")
    (f,) = report["findings"]
    assert f["code"] == "doctor.input_incomplete"
    assert f["evidence"] == [f"{notes}: nothing in it is output the doctor reads (no engine or client log line, error, crash, "
                             "stat line or launch command), so it could not be judged: pass the engine's or client's own log"]


def test_a_proxy_named_in_a_sentence_is_not_a_line_read(tmp_path: Path) -> None:
    """A proxy or gateway named in prose (the setup fact the streaming fix speaks to) is, like an engine
    named in a sentence, no line of its log: the text is still one nothing was read in."""
    notes = write(tmp_path, "notes.txt", "We run two replicas behind nginx and LiteLLM on the same host;\n"
                                         "the config is the one from the team wiki.\n")
    rc, report = analyze_json(notes)
    assert (rc, report["status"], [f["code"] for f in report["findings"]]) == (1, "incomplete", ["doctor.input_incomplete"])


# the layout of an issue's "Reproduction" and "Environment" blocks: the launch command and what
# `python3 -m sglang.check_env` prints (sgl-project/sglang python/sglang/check_env.py), no output of the run
COMMAND_AND_ENV = """\
python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp 2 --port 30000

Python: 3.11.13 (main, Jul 11 2025, 22:43:55) [Clang 20.1.4 ]
CUDA available: True
GPU 0,1: NVIDIA A100-SXM4-80GB
CUDA Driver Version: 535.86.10
PyTorch: 2.7.1+cu126
sglang: 0.4.9.post4
"""


def test_a_launch_command_without_the_runs_output_is_incomplete(tmp_path: Path) -> None:
    """The command says how the engine was started, the environment what was installed: nothing says how
    the run went, so "No problems found" would vouch for a run nobody has seen. With the engine's own
    start-up after it, the run was read and judged."""
    paste = write(tmp_path, "issue.txt", COMMAND_AND_ENV)
    rc, report = analyze_json(paste)
    assert (rc, report["status"], [f["code"] for f in report["findings"]]) == (1, "incomplete", ["doctor.input_incomplete"])
    assert report["findings"][0]["title"] == "nothing in the input shows how the run went: it was not judged"
    assert report["findings"][0]["evidence"] == [
        f"{paste}: it holds how the engine was launched but nothing the run printed (no engine or client log line, error, "
        "stat line, metrics or GPU reading), so how the run went could not be judged: pass the log of that launch"]
    healthy = (LOGS / "vllm-0.10.1.1-v1-a100-qwen2-7b-healthy-startup.log").read_text()
    log = write(tmp_path, "engine.log", "vllm serve Qwen2-7B-Instruct --port 8081 --max-model-len 16384 --gpu-memory-utilization 0.25\n" + healthy)
    rc, report = analyze_json(log)
    assert (rc, report["status"]) == (0, "ok"), report["findings"]


@pytest.mark.skipif(not (ROOT.parent / "shared" / "real").is_dir(), reason="shared/real is not here")
@pytest.mark.parametrize("name", [
    "nccl/net-ib-detected-azure.txt",  # one NCCL INFO line: a log record the failure reader read, no failure in it
    "vllm-startup/v0.10.1.1-v1-1xA100-0.25gmu.txt",  # a healthy start to "Application startup complete"
    "other-engines/sglang-0.4.3-deepseek-r1-tp8-startup-decode-batches.txt",  # its degraded-start lines are no failure
])
def test_healthy_real_logs_are_judged_and_stay_quiet(name: str) -> None:
    path = ROOT.parent / "shared" / "real" / name
    rc, report = analyze_json(str(path))
    failures = [f["code"] for f in report["findings"] if f["layer"] in ("doctor", "load", "access") or f["severity"] == "error"]
    assert (rc, failures) == (0, []), report["findings"]  # a perf warning (prefix caching off) may stay


def test_a_crash_loop_cut_in_its_next_start_up_is_judged_by_the_start_that_crashed(tmp_path: Path) -> None:
    """kubectl logs of a CrashLoopBackOff pod: every start logs vLLM's ERROR 'Error retrieving
    safetensors' (it goes on) and then dies in a CUDA OOM. Cut by the deadline inside the third
    start (after its ERROR lines, before its OOM), the diagnosis is the OOM the other starts ended in,
    not the ERROR line of a start whose end was never read."""
    header = (ROOT / "fixtures/engine_args/v0.10.1.1-v1-tp4-ray-4nodes-gptoss120b-ansi.log").read_bytes()
    z003 = (ROOT / "corpus/z003.log").read_bytes()  # a vLLM V1 worker's OOM while creating the weights, then Killed
    crash = z003[z003.index(b"(VllmWorker"):]
    log = tmp_path / "pod.log"
    log.write_bytes(header + crash + header + crash + header + b"".join(BAD_REQUEST % i for i in range(3000)) + crash)
    facts = Facts()
    collector = LogCollector(facts, Ticks(5))  # one look per block and per 256 parsed lines: inside the third start
    collector.add_path(str(log))
    logs = collector.finish()
    assert (logs.runs, logs.cut_run) == (3, 2)
    report = build_report(run_checks(facts, select(load_checks())), facts)
    top = report.findings[0]
    assert top.code == "load.weights_oom"
    oom_line = (header + crash + header).count(b"\n") + crash[: crash.index(b"OutOfMemoryError")].count(b"\n") + 1
    assert top.evidence[0].startswith(f"{log}:{oom_line}: (VllmWorker rank=5 pid=3073) torch.OutOfMemoryError")
    assert report.status == "incomplete"
