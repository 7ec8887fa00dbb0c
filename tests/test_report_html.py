"""The HTML report's page, without a browser (tests/test_html_browser.py renders it in Chromium):
self-contained, what was read in its summary, a copy button per command, text from logs and
servers escaped, and the sections drawn from the facts only when the facts hold them."""

from __future__ import annotations

import re
from pathlib import Path

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import CheckResult, Deadline, load_checks, run_checks, select
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix
from llm_doctor.redact import Redactor
from llm_doctor.report import build_report
from llm_doctor.report.render import render

ROOT = Path(__file__).resolve().parents[1]


def page(paths: list[str]) -> str:
    facts = load_paths(paths, Deadline(60).reserving())
    return render(build_report(run_checks(facts, select(load_checks()), Deadline(60)), facts, "llm-doctor analyze"), "html", Redactor())


def test_a_corpus_log_with_the_inputs_the_fixes_and_no_external_resource() -> None:
    log = ROOT / "fixtures/logs/vllm-v1-kv-cache-needed-gib.log"
    html = page([str(log)])
    assert f"<dt>logs</dt><dd>{log} ({log.stat().st_size:,} bytes, 1 lines" in html
    assert "<dt>tool</dt><dd>llm-doctor " in html
    commands = re.findall(r"<div class='cmd'><code>([^<]*)</code><button class='copy' type='button'>Copy</button></div>", html)
    assert commands == ["--max-model-len 5088"]
    assert not re.search(r"""(src|href)=|url\(|@import""", html)  # nothing fetched from anywhere
    assert "GPU topology" not in html and "Memory budget" not in html  # no facts for them


def test_an_engine_log_with_its_gpus_draws_the_budget_the_check_judged() -> None:
    """analyze of a vLLM start-up log and an nvidia-smi table: load.memory_fit's plan as bars."""
    html = page([str(ROOT / "fixtures/engine_args/v0.10.1.1-v1-1xA100-qwen2-7b-hardwrapped.log"),
                 str(ROOT / "fixtures/smi/nvidia-smi-table-1x-h200-driver550.txt")])  # fmt: skip
    budget = html[html.index("<h2>Memory budget per GPU</h2>"):html.index("<h2>GPU memory in use")]
    assert budget.count("<div class='bar'>") == 1
    assert re.search(r"KV cache <b>[\d,]+</b> tokens", budget)
    in_use = html[html.index("<h2>GPU memory in use (nvidia-smi)</h2>"):]
    assert in_use[:in_use.index("<h2>", 5)].count("<div class='bar'>") == 1  # the table's one GPU


def test_text_from_logs_and_servers_is_escaped() -> None:
    hostile = Finding("access.server_error", "<img src=x onerror=alert(1)>", ["<script>alert(2)</script>"],
                      [Fix("run", "echo '<b>' && curl -sS 'http://h/?a=1&b=2'")], severity="error")  # fmt: skip
    html = render(build_report([CheckResult("access.request", "access", "fail", 0, "<i>x</i>", [hostile])], Facts()), "html", Redactor())
    assert "<script>alert" not in html and "<img" not in html and "<i>x" not in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html and "curl -sS &#x27;http://h/?a=1&amp;b=2&#x27;" in html
