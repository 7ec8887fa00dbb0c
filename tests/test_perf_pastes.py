"""Perf attachments people paste into an issue (GPU monitors, Python launch code, top), read by
`llm-doctor analyze` on their own: the exact code, evidence and fix value, and healthy pastes quiet."""

from __future__ import annotations

from pathlib import Path

from llm_doctor.logparse import bench_runs, container_spec, gpu_monitors, launch_code, lspci, top
from tests.analyze_json import analyze, check

FIX = Path(__file__).resolve().parents[1] / "fixtures"
MON = FIX / "monitors"



def codes(report: dict) -> list[str]:
    return [f["code"] for f in report["findings"]]


# --- nvidia-smi dmon -------------------------------------------------------------------------


def test_dmon_series_becomes_sampled_utilization_and_the_busiest_row():
    facts = gpu_monitors.embedded_dmon((MON / "dmon-morpheus-load-ramp.txt").read_text())
    assert facts is not None and facts.source == "nvidia-smi dmon"
    (gpu,) = facts.gpus
    assert (gpu.util_gpu.min, gpu.util_gpu.mean, gpu.util_gpu.max, gpu.util_gpu.samples) == (3, 51.1, 99, 9)
    assert (gpu.power_draw_w, gpu.temperature_c, gpu.sm_clock_mhz) == (279, 56, 1755)  # the 99% row
    assert gpu.throttle_reasons == [] and "throttle_reasons" in gpu.unsupported  # no -s v: not measured


def test_dmon_quoted_old_layout_with_violations_column():
    facts = gpu_monitors.embedded_dmon((MON / "dmon-s-pucvmet-old-temp-4gpu.txt").read_text())
    assert facts is not None
    assert [(g.index, g.util_gpu.mean, g.temperature_c, g.memory_used_mib) for g in facts.gpus] == [
        (0, 25, 83, 11651), (1, 18, 84, 11653), (2, 24, 80, 11653), (3, 18, 70, 11660)]
    assert all(g.throttle_reasons == [] and not g.unsupported for g in facts.gpus)  # pviol/tviol 0: measured, none


def test_dmon_of_a_loaded_gpu_is_healthy():
    report = analyze(MON / "dmon-morpheus-load-ramp.txt")
    assert report["status"] == "ok" and report["findings"] == []
    assert check(report, "perf.gpu_utilization")["detail"] == "GPU utilization mean 51% while serving"


def test_dmon_of_a_gpu_that_waits_is_low_gpu_util():
    report = analyze(MON / "dmon-morpheus-before-load.txt")
    (finding,) = report["findings"]
    assert finding["code"] == "perf.low_gpu_util"
    assert finding["evidence"][0] == "GPU0: utilization min/mean/max 3/6.3/11% over 3 sample(s)"
    assert "mean 6%" in finding["evidence"][1]
    assert finding["fixes"][0]["command"] == "llm-doctor run --sample 10 --probe-load 16"


def test_dmon_single_sample_per_gpu_is_no_verdict():
    report = analyze(MON / "dmon-s-pucvmet-old-temp-4gpu.txt")
    assert "doctor.input_incomplete" not in codes(report)  # read: not "nothing the doctor reads"
    assert check(report, "perf.gpu_utilization")["status"] == "skip"  # one reading of each GPU is not a series


# --- gpustat ---------------------------------------------------------------------------------


def test_gpustat_rows_with_fan_codec_and_power():
    facts = gpu_monitors.embedded_gpustat((MON / "gpustat-power-fan-codec-3gpu.txt").read_text())
    assert facts is not None and facts.source == "gpustat"
    g0, g1, g2 = facts.gpus
    assert (g0.name, g0.util_gpu.mean, g0.temperature_c, g0.power_draw_w, g0.power_limit_w) == ("GeForce GTX TITAN 0", 76, 80, 125, 250)
    assert (g0.memory_used_mib, g0.memory_total_mib) == (8000, 12287)
    assert g1.util_gpu.mean == 0 and g1.power_draw_w is None and g1.power_limit_w == 250  # '??' is unknown, not zero
    assert g2.util_gpu is None and g2.power_limit_w is None


def test_gpustat_snapshot_is_read_and_quiet():
    report = analyze(MON / "gpustat-power-fan-codec-3gpu.txt")
    assert report["status"] == "ok" and report["findings"] == []


# --- Python code that starts an engine -------------------------------------------------------

CODE = FIX / "launch_code"


def test_engineargs_call_with_a_tiny_batch_cap_is_batching_limited():
    report = analyze(CODE / "vllm-example-engineargs-chameleon-max-num-seqs-2.py.txt")
    (finding,) = report["findings"]
    assert finding["code"] == "perf.batching_limited"
    assert finding["evidence"] == ["max-num-seqs=2 (code)"]
    assert finding["fixes"][0]["command"] == "--max-num-seqs 256"  # vLLM's default max_num_seqs
    assert report["facts"]["deployment"]["model"] == "facebook/chameleon-7b"


def test_literal_arguments_only_and_prose_is_no_call():
    cfg = launch_code.config((CODE / "vllm-example-engineargs-chameleon-max-num-seqs-2.py.txt").read_text())
    assert cfg is not None and (cfg.engine, cfg.max_num_seqs, cfg.max_model_len) == ("vllm", 2, 4096)
    assert cfg.unknown_flags == []  # `args.disable_mm_preprocessor_cache` is a variable: skipped, not "invalid"
    assert launch_code.calls("We serve an LLM (a 7B model) with vLLM(see above).") == []


def test_healthy_offline_starts_stay_quiet():
    for name in ("vllm-example-llm-prefix-caching-on.py.txt", "sglang-docs-offline-engine.py.txt"):
        report = analyze(CODE / name)
        assert report["status"] == "ok" and report["findings"] == [], name
        assert check(report, "perf.prefix_cache")["detail"] == "prefix caching on", name
    sglang = launch_code.config((CODE / "sglang-docs-offline-engine.py.txt").read_text())
    assert sglang is not None and (sglang.engine, sglang.model) == ("sglang", "qwen/qwen2.5-0.5b-instruct")


# --- serving-benchmark sweeps ----------------------------------------------------------------

SWEEP = FIX / "bench" / "vllm-bench-serve-sweep-c1-c4-c32-qwen2.5-7b.txt"


def test_a_sweep_from_one_request_fills_the_probe_facts():
    found = bench_runs.runs(SWEEP.read_text())
    assert [(r.concurrency, r.output_tps, r.requests) for r in found] == [(1, 62.61, 200), (4, 237.41, 200), (32, 1278.33, 200)]
    low, high = bench_runs.sweep(found)
    assert (low.concurrency, high.concurrency) == (1, 32)
    assert bench_runs.sweep(found[1:]) is None  # from 4 up: a flat curve may be a saturated GPU, not a batch cap


def test_a_sweep_that_scales_is_healthy_and_its_failed_requests_row_is_no_failure():
    report = analyze(SWEEP)
    assert report["status"] == "ok" and report["findings"] == []  # "Failed requests: 0" is a count, not an error
    probe = report["facts"]["host"]["probe"]
    assert (probe["concurrency"], probe["tps_1"], probe["tps_n"]) == (32, 62.61, 1278.33)
    assert check(report, "perf.batching")["detail"] == "no batching limit seen"


# --- nvidia-smi table rows copied without the header --------------------------------------------


def test_table_rows_without_their_header_are_read(tmp_path):
    lines = (FIX / "smi" / "nvidia-smi-table-8x-rtx4090-driver550.txt").read_text().splitlines()
    rows = tmp_path / "rows.txt"
    rows.write_text("the GPUs while idle:\n" + "\n".join(lines[7:15]) + "\n")  # GPU 0 and 1, as a reporter copies them
    report = analyze(rows)
    gpus = report["facts"]["gpus"]["gpus"]
    assert [(g["index"], g["name"], g["power_draw_w"], g["memory_total_mib"]) for g in gpus] == [
        (0, "NVIDIA GeForce RTX 4090", 20, 24564), (1, "NVIDIA GeForce RTX 4090", 20, 24564)]
    assert report["status"] == "ok" and "doctor.input_incomplete" not in codes(report)


# --- lspci -vv link state ----------------------------------------------------------------------

JAN = FIX / "lspci" / "jan-183-rtx4090-riser-lnksta-2.5gts.txt"


def test_lnk_lines_copied_alone_are_the_gpus_link_state():
    facts = lspci.embedded_lspci(JAN.read_text())
    assert facts is not None
    (gpu,) = facts.gpus
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current, gpu.pcie_width_max) == (1, 4, 16, 16)


def test_an_idle_link_trained_down_in_generation_only_is_no_finding():
    report = analyze(JAN)
    assert report["status"] == "ok" and report["findings"] == []  # an idle GPU drops to 2.5GT/s to save power
    assert check(report, "perf.interconnect")["detail"] == "GPU links as expected"


def test_only_nvidia_gpus_of_a_listing_count():
    text = ("00:01.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge\n"
            "\t\tLnkSta:\tSpeed 2.5GT/s, Width x4 (downgraded)\n") + JAN.read_text()
    assert lspci.embedded_lspci(text) is None  # a device listing whose only link is a bridge's: no GPU


# --- dcgmi dmon ----------------------------------------------------------------------------------


def test_dcgmi_dmon_rows_with_na_cells():
    facts = gpu_monitors.embedded_dcgmi((MON / "dcgmi-dmon-smact-tenso-smclk-power-gputl.txt").read_text())
    assert facts is not None and facts.source == "dcgmi dmon"
    (gpu,) = facts.gpus
    assert (gpu.util_gpu.mean, gpu.util_gpu.samples, gpu.sm_clock_mhz, gpu.power_draw_w) == (100, 3, 1980, 612.4)


def test_dcgmi_dmon_of_a_busy_gpu_is_healthy():
    report = analyze(MON / "dcgmi-dmon-smact-tenso-smclk-power-gputl.txt")
    assert report["status"] == "ok" and report["findings"] == []
    assert check(report, "perf.gpu_utilization")["detail"] == "GPU utilization mean 100% while serving"


# --- top ------------------------------------------------------------------------------------------

TOP = FIX / "top" / "top-host-saturated-no-engine.txt"


def test_top_screen_gives_the_hosts_cpu_and_no_engine_process():
    snap = top.parse(TOP.read_text())
    assert snap is not None
    assert (snap.load_avg_1m, snap.cpu_busy_percent, snap.cpu_count, snap.tasks) == (8.0, 100.0, None, [])


def test_a_busy_host_without_an_engine_is_not_the_engines_cpu_bound():
    report = analyze(TOP)
    assert report["facts"]["host"]["cpu_percent"] == 100.0 and report["facts"]["host"]["processes"] == []
    assert "perf.cpu_bound" not in codes(report) and "doctor.input_incomplete" not in codes(report)


# --- engine container specs (docker-compose, Kubernetes) ---------------------------------------

SPEC = FIX / "container_spec"


def test_kubernetes_args_block_list_with_comments_is_the_launch_command():
    (argv,) = container_spec.commands((SPEC / "k8s-vllm-deepseek-tp2-args-list.yaml.txt").read_text())
    assert argv == ["docker", "run", "vllm/vllm-openai:v0.6.6", "--model", "/models/DeepSeek-V4-Pro", "--tensor-parallel-size", "2",
                    "--max-model-len", "32768", "--gpu-memory-utilization", "0.90", "--enable-prefix-caching", "--max-num-seqs", "64"]
    report = analyze(SPEC / "k8s-vllm-deepseek-tp2-args-list.yaml.txt")
    dep = report["facts"]["deployment"]
    assert (dep["engine"], dep["tensor_parallel_size"], dep["max_num_seqs"], dep["enable_prefix_caching"]) == ("vllm", 2, 64, True)
    assert report["status"] == "ok" and report["findings"] == []


def test_compose_folded_command_is_read_and_quiet():
    report = analyze(SPEC / "compose-vllm-embedding-folded-command.yaml.txt")
    assert report["facts"]["deployment"]["model"] == "/models/bge-large-zh-v1.5"
    assert report["status"] == "ok" and report["findings"] == []


def test_a_shell_wrapped_args_string_and_other_images_are_told_apart():
    text = ('image: vllm/vllm-openai:latest\ncommand: ["/bin/sh", "-c"]\nargs: [\n  "vllm serve m --max_num_batched_tokens 1024"\n]\n'
            "image: chromadb/chroma:latest\ncommand: --port 8000\n")
    assert container_spec.commands(text) == [["docker", "run", "vllm/vllm-openai:latest", "vllm", "serve", "m",
                                              "--max_num_batched_tokens", "1024"]]


def test_a_recipes_engine_named_argument_list_is_the_launch_command(tmp_path):
    # https://github.com/vllm-project/recipes/pull/573 (models/deepseek-ai/DeepSeek-V4-Pro.yaml, the old value)
    text = 'strategy_overrides:\n      vllm_args:\n        - "--enforce-eager"\n        - "--max-num-seqs"\n        - "2"\n'
    assert container_spec.engine_arg_lists(text) == [["vllm", "serve", "--enforce-eager", "--max-num-seqs", "2"]]
    path = tmp_path / "DeepSeek-V4-Pro.yaml"
    path.write_text(text)
    report = analyze(path)
    dep = report["facts"]["deployment"]
    assert (dep["engine"], dep["max_num_seqs"], dep["enforce_eager"]) == ("vllm", 2, True)
    (f,) = [f for f in report["findings"] if f["code"] == "perf.batching_limited"]
    assert f["severity"] == "warn" and [x["command"] for x in f["fixes"]] == ["--max-num-seqs 256"]
    assert "perf.eager_mode" in codes(report)


def test_an_argument_list_under_a_key_naming_no_engine_is_not_read():
    assert container_spec.engine_arg_lists('extra_args:\n  - "--max-num-seqs"\n  - "2"\n') == []


def test_a_sweep_tabulated_by_hand_fills_the_probe_and_its_per_stream_column_is_not_the_throughput(tmp_path):
    # https://github.com/blazux/qwen3.8-Flash-DGX/issues/1 (a comment): aggregate tok/s grows 15.6x from c=1 to c=48,
    # while "per stream" falls as streams share the GPU (as it should): batching works
    text = ("| c | aggregate tok/s | per stream | PLE worker cpu% | majflt/token | TTFT | queue |\n"
            "|---:|---:|---:|---:|---:|---:|---:|\n"
            "| 1 | 17.1 | 17.1 | 4.9 | 16.0 | 0.22 | 0.00 |\n"
            "| 8 | 87.5 | 10.9 | 6.1 | 7.0 | 0.53 | 0.00 |\n"
            "| 16 | 131.6 | 8.2 | 23.9 | 9.6 | 0.83 | 0.00 |\n"
            "| 32 | 212.0 | 6.6 | 19.9 | 4.3 | 1.19 | 0.00 |\n"
            "| **48** | **266.8** | 5.6 | 17.9 | 3.6 | **1.60** | 0.01 |\n")
    runs = bench_runs.table_runs(text)
    assert [(r.concurrency, r.output_tps, r.line) for r in runs][::4] == [(1, 17.1, 3), (48, 266.8, 7)]
    path = tmp_path / "comment.md"
    path.write_text(text)
    report = analyze(path)
    probe = report["facts"]["host"]["probe"]
    assert (probe["concurrency"], probe["tps_1"], probe["tps_n"]) == (48, 17.1, 266.8)
    assert "the rows of a table" in probe["notes"][0]
    assert "perf.batching_limited" not in codes(report) and check(report, "perf.batching")["status"] == "pass"
    # a table with no concurrency column is no sweep
    assert bench_runs.table_runs(text.replace("| c |", "| model |", 1)) == []


def test_the_gpus_a_container_is_given_are_the_engines_and_tp_below_them_leaves_some_idle(tmp_path):
    # the shapes of the Kubernetes device plugin docs (resources.limits `nvidia.com/gpu: N`, env `- name:` / `value:`),
    # Docker Compose's GPU docs (deploy.resources.reservations.devices `- driver: nvidia`, `count: N`, `capabilities: [gpu]`)
    # and `docker run --gpus` (a count or '"device=0,2"'); the containers around the k8s fixture's `args:` block
    k8s = ("      containers:\n      - name: vllm\n        image: vllm/vllm-openai:v0.8.5\n        args:\n"
           "          - --model=meta-llama/Llama-3.1-70B-Instruct\n          - --tensor-parallel-size=2\n"
           "        resources:\n          limits:\n            nvidia.com/gpu: 4\n")
    (argv,) = container_spec.commands(k8s)
    assert argv[:5] == ["docker", "run", "--gpus", "4", "vllm/vllm-openai:v0.8.5"]
    compose = ("services:\n  vllm:\n    image: vllm/vllm-openai:latest\n    command: --model Qwen/Qwen2.5-7B-Instruct\n"
               "    environment:\n      - CUDA_VISIBLE_DEVICES=0,1\n    deploy:\n      resources:\n        reservations:\n"
               "          devices:\n            - driver: nvidia\n              count: 2\n              capabilities: [gpu]\n")
    (argv,) = container_spec.commands(compose)
    assert argv[:7] == ["docker", "run", "-e", "CUDA_VISIBLE_DEVICES=0,1", "--gpus", "2", "vllm/vllm-openai:latest"]
    from llm_doctor.engine_args import parse_command

    assert parse_command("docker run --gpus '\"device=0,2\"' vllm/vllm-openai:latest --model m").gpus_granted == 2
    assert parse_command("docker run --gpus all vllm/vllm-openai:latest --model m").gpus_granted is None
    (tmp_path / "deploy.yaml").write_text(k8s)
    report = analyze(tmp_path / "deploy.yaml")
    (f,) = [f for f in report["findings"] if f["code"] == "perf.tp_mismatch"]
    assert f["title"] == "the engine uses 2 of 4 GPUs: 2 GPU(s) stay idle"
    assert "GPUs available to the engine: 4 (the container was given 4 GPU(s))" in f["evidence"]
    assert [x["command"] for x in f["fixes"]] == ["--tensor-parallel-size 4", "--data-parallel-size 2"]
    # TP over every GPU it was given: nothing idle
    (tmp_path / "deploy.yaml").write_text(k8s.replace("size=2", "size=4"))
    assert "perf.tp_mismatch" not in codes(analyze(tmp_path / "deploy.yaml"))
