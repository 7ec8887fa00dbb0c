"""`llm-doctor analyze` on real nvidia-smi / topo / metrics outputs plus real engine command lines:
the exact perf code at rank 1, its evidence, and the computed fix value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.analyze_json import analyze, check

FIX = Path(__file__).resolve().parents[1] / "fixtures"



def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def commands(finding: dict) -> list[str]:
    return [f.get("command") for f in finding["fixes"]]


def test_tp4_over_pcie_host_bridge_is_slow_interconnect():
    r = analyze(FIX / "cmdline" / "sglang-tp4-a100-pcie-disable-radix.txt", FIX / "topo" / "rtx3090-4x-phb-spaces.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.slow_interconnect"
    assert any("GPU0<->GPU1 = PHB" in e for e in top["evidence"])
    assert "--tp 2 --dp 2" in commands(top)


def test_tp_on_pcie_switch_with_p2p_is_fine_but_idle_gpus_are_not(tmp_path):
    cmd = write(tmp_path, "cmd.txt", "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 4\n")
    r = analyze(cmd, FIX / "topo" / "rtx4090-8x-pix-sys-no-nic.txt")
    codes = [f["code"] for f in r["findings"]]
    assert codes[0] == "perf.tp_mismatch" and "perf.slow_interconnect" not in codes
    assert "the engine uses 4 of 8 GPUs" in r["findings"][0]["title"]
    # PCIe only (no NV# in the matrix): replicas, not more TP
    assert commands(r["findings"][0]) == ["--data-parallel-size 2"]


def test_tp_across_sys_picks_gpus_under_one_switch(tmp_path):
    cmd = write(tmp_path, "cmd.txt", "CUDA_VISIBLE_DEVICES=2,3,4,5 vllm serve Qwen/Qwen2.5-32B-Instruct --tensor-parallel-size 4\n")
    r = analyze(cmd, FIX / "topo" / "l20-pcie-8x-pix-sys-2nic.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.slow_interconnect" and "SYS" in top["title"]
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3" in commands(top)


def test_tp_larger_than_the_node_splits_into_tp_x_pp(tmp_path):
    cmd = write(tmp_path, "cmd.txt", "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 16 "
                "--nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.1:5000 --trust-remote-code\n")
    r = analyze(cmd, FIX / "smi" / "nvidia-smi-table-8x-h100-sxm-driver565.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.tp_mismatch" and top["title"] == "TP=16 spans 2 nodes of 8 GPUs each"
    assert commands(top) == ["--tp 8 --pp-size 2"]
    # two nodes of 8 give the 16 GPUs TP=16 needs: the memory plan must not call it invalid
    assert "needs 16 GPUs; 8 given" not in json.dumps(r["findings"])
    # one node, no --nnodes: the same advice, next to the load layer's "needs 16 GPUs"
    cmd.write_text("vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 16 --trust-remote-code\n")
    r = analyze(cmd, FIX / "smi" / "nvidia-smi-table-8x-h100-sxm-driver565.txt")
    (f,) = [f for f in r["findings"] if f["code"] == "perf.tp_mismatch"]
    assert "span nodes" in f["title"] and "--tensor-parallel-size 8 --pipeline-parallel-size 2" in commands(f)


def test_tp1_with_two_visible_gpus():
    # corpus d003's launch (SGLang without --tp on CUDA_VISIBLE_DEVICES=0,1), as a command file
    r = analyze(_d003_cmd(), FIX / "smi" / "nvidia-smi-table-2x-l4-driver550-ray-workers.txt")
    top = next(f for f in r["findings"] if f["code"] == "perf.tp_mismatch")
    assert "uses 1 of 2 GPUs" in top["title"] and "--tp 2" in commands(top)


def _d003_cmd() -> Path:
    import tempfile

    p = Path(tempfile.mkdtemp()) / "launch.sh"
    p.write_text("CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path mistralai/Mixtral-8x7B-Instruct-v0.1 --port 30000\n")
    return p


def test_sglang_prefill_budget_below_chunk():
    r = analyze(FIX / "cmdline" / "sglang-tp8-h200-chunked-prefill-32768.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.batching_limited"
    assert "max_prefill_tokens 16384 is below chunked_prefill_size 32768" in top["title"]
    assert commands(top) == ["--max-prefill-tokens 32768"]


def test_mem_fraction_095_is_overcommitted():
    r = analyze(FIX / "cmdline" / "sglang-tp4-mem-fraction-0.95.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.memory_overcommitted"
    assert top["evidence"][0] == "mem_fraction_static=0.95 (cmdline)"
    assert "--mem-fraction-static 0.85" in commands(top)


def test_tgi_default_fraction_is_not_overcommitted(tmp_path):
    # TGI's --cuda-memory-fraction defaults to 1.0, but its warmup budgets 1.0 x TGI_WIGGLE_ROOM (0.90)
    r = analyze(write(tmp_path, "launch.sh", "text-generation-launcher --model-id meta-llama/Llama-3.1-8B-Instruct\n"))
    assert "perf.memory_overcommitted" not in [f["code"] for f in r["findings"]]
    assert check(r, "perf.memory_headroom")["status"] == "pass"
    assert check(r, "perf.memory_headroom")["detail"] == "cuda_memory_fraction=1 x TGI_WIGGLE_ROOM 0.9 = 0.9 budgeted"


def test_tgi_wiggle_room_099_is_overcommitted(tmp_path):
    launch = "TGI_WIGGLE_ROOM=0.99 text-generation-launcher --model-id meta-llama/Llama-3.1-8B-Instruct\n"
    r = analyze(write(tmp_path, "launch.sh", launch))
    (f,) = [f for f in r["findings"] if f["code"] == "perf.memory_overcommitted"]
    assert f["evidence"][0].startswith("cuda_memory_fraction=1 x TGI_WIGGLE_ROOM 0.99 = 0.99 budgeted")
    assert "--cuda-memory-fraction 0.90" in commands(f)


def test_sglang_queue_with_free_kv_is_batching_limited():
    r = analyze(FIX / "metrics" / "sglang-0.4-era-metrics-llama31-8b-model_name-label.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.batching_limited"
    assert "sglang:num_queue_reqs 2826" in top["evidence"]
    # 162 running at 28% KV: 162 * 0.8 / 0.28 = 462.9
    assert commands(top) == ["--max-running-requests 462"]
    assert "perf.high_latency" in [f["code"] for f in r["findings"][1:]]


def test_prefix_caching_off_from_cache_config_info():
    r = analyze(FIX / "metrics" / "vllm-v0-metrics-excerpt-cache-config-info-aibrix.txt")
    (f,) = [f for f in r["findings"] if f["code"] == "perf.prefix_caching_off"]
    assert f["evidence"][0] == "enable_prefix_caching=False (metrics)"
    assert commands(f) == ["--enable-prefix-caching"]


def test_a_pooling_model_with_prefix_caching_off_is_no_finding(tmp_path):
    # corpus i041 (train, https://github.com/vllm-project/vllm/issues/11320): vLLM 0.6.4's config line for bge-m3
    line = ("INFO 12-19 19:52:31 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) with config: "
            "model='/data/models/bge-m3-embed-beta1', dtype=torch.float16, max_seq_len=8192, tensor_parallel_size=1, "
            "enforce_eager=False, enable_prefix_caching=False, pooler_config=PoolerConfig(pooling_type='CLS', normalize=False, "
            "softmax=False, step_tag_id=None, returned_token_ids=None))\n")
    r = analyze(write(tmp_path, "engine.log", line))
    assert r["facts"]["deployment"]["pooling"] is True
    assert check(r, "perf.prefix_cache")["status"] == "skip"
    assert "perf.prefix_caching_off" not in [f["code"] for f in r["findings"]]
    # the same line for a generating model (vLLM prints pooler_config=None) keeps its V0-default note
    r = analyze(write(tmp_path, "engine.log", line.split(", pooler_config=")[0] + ", pooler_config=None)\n"))
    assert not r["facts"]["deployment"]["pooling"]
    assert [f["severity"] for f in r["findings"] if f["code"] == "perf.prefix_caching_off"] == ["info"]
    # on a command line: vLLM --task embed, --runner pooling; SGLang --is-embedding
    for launch in ("vllm serve BAAI/bge-m3 --task embed", "vllm serve BAAI/bge-m3 --runner pooling --no-enable-prefix-caching",
                   "python -m sglang.launch_server --model-path BAAI/bge-m3 --is-embedding --disable-radix-cache"):
        r = analyze(write(tmp_path, "launch.sh", launch + "\n"))
        assert r["facts"]["deployment"]["pooling"] is True, launch
        assert "perf.prefix_caching_off" not in [f["code"] for f in r["findings"]], launch


def test_power_capped_gpu_in_q_output_is_not_throttled_at_idle():
    """The RTX 5090 -q shows SW Power Cap active at 24 W of 575 W: an idle artefact, not throttling."""
    r = analyze(FIX / "smi" / "nvidia-smi-q-1x-rtx5090-driver570.txt")
    assert "perf.gpu_throttled" not in [f["code"] for f in r["findings"]]
    assert {c["id"]: c["status"] for c in r["checks"]}["perf.clocks"] == "pass"


def test_power_cap_in_a_working_performance_state_is_throttling_when_no_draw_is_shown():
    """An -q excerpt taken during generation: P2 (CUDA work) with SW Power Cap active and no power section."""
    r = analyze(FIX / "smi" / "nvidia-smi-q-excerpt-p2-sw-power-cap-active-ollama.txt")
    (f,) = [f for f in r["findings"] if f["code"] == "perf.gpu_throttled"]
    assert f["evidence"] == ["GPU0: active sw_power_cap, 77 C, performance state P2"]
    assert commands(f) == ["nvidia-smi -i 0 -q -d POWER"]
    # the RTX 5090 above is in P8 at 24 W: its active cap stays an idle artefact (the test before this one)


def test_idle_narrow_link_is_info_and_idle_low_generation_is_normal():
    r = analyze(FIX / "smi" / "nvidia-smi-q-1x-l4-driver550.txt")  # Gen1 x8 of Gen4 x16, 0% busy
    (f,) = [f for f in r["findings"] if f["code"] == "perf.slow_interconnect"]
    assert f["severity"] == "info" and "measured while idle" in f["title"]
    assert f["evidence"] == ["GPU0 00000000:01:00.0: PCIe link width x8 of x16 at Gen1 of Gen4, 0% busy"]
    r = analyze(FIX / "smi" / "nvidia-smi-q-8x-h100-sxm-driver565.txt")  # Gen5 x16: full
    assert "perf.slow_interconnect" not in [f["code"] for f in r["findings"]]


def test_throttled_under_load(tmp_path):
    """The real H200 -q with its HW slowdown reasons switched on and the SM clock held at 1110 MHz."""
    q = (FIX / "smi" / "nvidia-smi-q-1x-h200-driver550.txt").read_text()
    hot = (q.replace("        HW Slowdown                       : Not Active", "        HW Slowdown                       : Active")
           .replace("            HW Thermal Slowdown           : Not Active", "            HW Thermal Slowdown           : Active")
           .replace("        SM                                : 345 MHz", "        SM                                : 1110 MHz"))
    assert hot.count(": Active") == q.count(": Active") + 2
    r = analyze(write(tmp_path, "q.txt", hot))
    top = r["findings"][0]
    assert top["code"] == "perf.gpu_throttled"
    assert "hw_slowdown" in top["title"] and "hw_thermal_slowdown" in top["title"]
    assert "SM 1110 of 1980 MHz" in top["evidence"][0]


def test_other_processes_hold_the_gpu_in_a_saved_table(tmp_path):
    table = (FIX / "smi" / "nvidia-smi-table-8x-h100-sxm-driver565.txt").read_text()
    busy = table.replace("|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |\n"
                         "| N/A   30C    P0            100W /  700W |       1MiB /  81559MiB |      0%      Default |",
                         "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |\n"
                         "| N/A   30C    P0            100W /  700W |   40961MiB /  81559MiB |      0%      Default |")
    busy = busy.replace("|  No running processes found                                                             |",
                        "|    0   N/A  N/A     51234      C   /opt/conda/bin/jupyter-lab                  40960MiB |")
    assert busy != table
    cmd = write(tmp_path, "cmd.txt", "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.9\n")
    r = analyze(cmd, write(tmp_path, "smi.txt", busy))
    top = r["findings"][0]
    assert top["code"] == "load.gpu_memory_occupied" and "pid 51234" in top["title"]
    assert "kill 51234" in commands(top)
    assert "CUDA_VISIBLE_DEVICES=1" in commands(top)
    # (81559 - 40961) / 81559 = 0.4978 -> 0.47 after a 2% margin
    assert "--gpu-memory-utilization 0.47" in commands(top)


def test_nvidia_smi_from_the_engine_itself_is_not_blamed():
    """The L4 table: memory held by the engine's own python/ray workers (0 MiB per process in a container)."""
    import tempfile

    cmd = Path(tempfile.mkdtemp()) / "cmd.txt"
    cmd.write_text("vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 2\n")
    r = analyze(cmd, FIX / "smi" / "nvidia-smi-table-2x-l4-driver550-ray-workers.txt")
    assert "load.gpu_memory_occupied" not in [f["code"] for f in r["findings"]]


def test_ecc_and_remapped_rows_are_a_gpu_fault():
    r = analyze(FIX / "smi" / "a100-sxm4-80gb-q-ecc-remapped-rows-excerpt.txt")
    top = r["findings"][0]
    assert top["code"] == "load.gpu_fault" and "remapped rows pending" in top["evidence"][0]


def test_launch_command_is_not_mistaken_for_a_log(tmp_path):
    cmd = write(tmp_path, "notes.txt", "$ vllm serve m --enforce-eager \\\n    --gpu-memory-utilization 0.97\n")
    r = analyze(cmd)
    assert r["facts"]["deployment"]["gpu_memory_utilization"] == 0.97
    assert r["facts"]["deployment"]["sources"]["gpu_memory_utilization"] == "cmdline"


def test_uncorrectable_ecc_excerpt_is_a_gpu_fault():
    r = analyze(FIX / "smi" / "q-ecc-sram-uncorrectable-excerpt.txt")
    top = r["findings"][0]
    assert top["code"] == "load.gpu_fault"
    assert top["evidence"] == ["GPU0: 1 uncorrectable ECC error(s) since the last driver load"]


def test_tp_larger_than_the_model_needs(tmp_path):
    cmd = write(tmp_path, "cmd.txt", "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 8\n")
    r = analyze(cmd, FIX / "smi" / "nvidia-smi-table-8x-h100-sxm-driver565.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.tp_mismatch" and "TP 1 holds it, 8 replicas" in top["title"]
    assert commands(top) == ["--tensor-parallel-size 1 --data-parallel-size 8"]
    # a 70B model needs TP 8 on 80 GB GPUs: no finding
    cmd.write_text("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8\n")
    r = analyze(cmd, FIX / "smi" / "nvidia-smi-table-8x-h100-sxm-driver565.txt")
    assert "perf.tp_mismatch" not in [f["code"] for f in r["findings"]]


def test_tgi_without_num_shard_is_judged_at_the_shards_it_starts(tmp_path):
    # TGI's launcher shards over every GPU it is given when --num-shard is left out: TP 8 here, as the
    # memory plan says, not the TP 1 a missing flag would suggest
    cmd = write(tmp_path, "cmd.txt", "text-generation-launcher --model-id meta-llama/Llama-3.1-8B-Instruct\n")
    r = analyze(cmd, FIX / "smi" / "nvidia-smi-table-8x-h100-sxm-driver565.txt")
    (f,) = [f for f in r["findings"] if f["code"] == "perf.tp_mismatch"]
    assert f["evidence"][0].startswith("tensor_parallel_size=8 (default)")
    assert "TP 1 holds it, 8 replicas" in f["title"]
    assert commands(f) == ["--num-shard 1"]
    # two of the eight given to it: two shards
    cmd.write_text("CUDA_VISIBLE_DEVICES=0,1 text-generation-launcher --model-id meta-llama/Llama-3.1-8B-Instruct\n")
    r = analyze(cmd, FIX / "smi" / "nvidia-smi-table-8x-h100-sxm-driver565.txt")
    (f,) = [f for f in r["findings"] if f["code"] == "perf.tp_mismatch"]
    assert f["evidence"][0].startswith("tensor_parallel_size=2 (default)")


def test_latency_against_the_bandwidth_floor(tmp_path):
    cmd = write(tmp_path, "cmd.txt", "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 1\n")
    r = analyze(cmd, FIX / "metrics" / "sglang-0.4-era-metrics-llama31-8b-model_name-label.txt",
                FIX / "smi" / "nvidia-smi-table-1x-h200-driver550.txt")
    (f,) = [f for f in r["findings"] if f["code"] == "perf.high_latency"]
    # 866964.58 s / 7400757 tokens = 117 ms; 15.0 GiB / 4800 GB/s = 3.3 ms
    assert "117 ms per output token" in f["title"]
    assert any("floor is about 3.3 ms per token" in e and "observed 35x" in e for e in f["evidence"])
    (u,) = [f for f in r["findings"] if f["code"] == "perf.low_gpu_util"]
    assert u["severity"] == "info" and "(one reading)" in u["title"]


def test_engine_log_saying_no_p2p_is_slow_interconnect():
    r = analyze(FIX / "perf" / "v0.10.1.1-v1-tp2-a100-0.25gmu.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.slow_interconnect"
    assert "lacks GPU P2P capability" in top["evidence"][0]


def test_engine_log_pcie_only_tp4_suggests_replicas():
    r = analyze(FIX / "perf" / "v0.8.0rc3-v0-fallback-tp4-pcie-custom-allreduce-disabled.txt")
    (f,) = [f for f in r["findings"] if f["code"] == "perf.slow_interconnect"]
    assert "more than two PCIe-only GPUs" in f["evidence"][0]
    assert "--tensor-parallel-size 2 --data-parallel-size 2" in commands(f)


def test_geforce_tp_has_no_p2p(tmp_path):
    cmd = write(tmp_path, "cmd.txt", "vllm serve Qwen/Qwen2.5-14B-Instruct --tensor-parallel-size 2\n")
    r = analyze(cmd, FIX / "smi" / "nvidia-smi-table-8x-rtx4090-driver550.txt", FIX / "topo" / "rtx4090-8x-pix-sys-no-nic.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.slow_interconnect" and "without P2P" in top["title"]
    assert any("GeForce" in e for e in top["evidence"])
    # Qwen2.5-14B's bf16 weights do not fit one 24 GB card: no TP 1 x DP 2 replicas offered
    assert "--tensor-parallel-size 1 --data-parallel-size 2" not in commands(top)
    cmd.write_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2\n")
    r = analyze(cmd, FIX / "smi" / "nvidia-smi-table-8x-rtx4090-driver550.txt", FIX / "topo" / "rtx4090-8x-pix-sys-no-nic.txt")
    (fix,) = [f for f in r["findings"][0]["fixes"] if f.get("command")]
    assert fix["command"] == "--tensor-parallel-size 1 --data-parallel-size 2"
    assert "GiB of weights per GPU at TP 1, of 24 GiB" in fix["summary"]


def test_llamacpp_with_no_gpu_layers(tmp_path):
    r = analyze(write(tmp_path, "cmd.txt", "./llama-server -m models/qwen2.5-7b-q4_k_m.gguf -ngl 0 -c 8192\n"))
    top = r["findings"][0]
    assert top["code"] == "perf.low_gpu_util" and commands(top) == ["-ngl 999"]


def test_max_num_seqs_tiny(tmp_path):
    r = analyze(write(tmp_path, "cmd.txt", "vllm serve Qwen/Qwen2.5-7B-Instruct --max-num-seqs 2\n"))
    top = r["findings"][0]
    assert top["code"] == "perf.batching_limited" and top["severity"] == "warn"
    assert commands(top) == ["--max-num-seqs 256"]


def test_custom_all_reduce_disabled_on_nvlink(tmp_path):
    cmd = write(tmp_path, "cmd.txt", "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8 --disable-custom-all-reduce\n")
    r = analyze(cmd, FIX / "topo" / "h100-8x-nv18-8nic-mlx5-tabs-missing-tab-artifact.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.slow_interconnect" and "--disable-custom-all-reduce" in top["title"]


def test_nccl_sockets_across_nodes_is_slow_interconnect(tmp_path):
    """The real `NET/Socket : Using` line, from a 2-node SGLang launch: TCP between nodes."""
    socket_line = (FIX / "logs" / "nccl-net-socket-selected.txt").read_text()
    log = write(tmp_path, "node0.log", "python -m sglang.launch_server --model-path Qwen/Qwen2.5-32B --tp 16 --nnodes 2 "
                "--node-rank 0 --dist-init-addr 10.0.0.1:5000\n" + socket_line)
    r = analyze(log, FIX / "smi" / "nvidia-smi-table-8x-h100-sxm-driver565.txt")
    (f,) = [f for f in r["findings"] if "TCP sockets" in f["title"]]
    assert f["code"] == "perf.slow_interconnect"
    assert f["title"] == "NCCL uses TCP sockets (enp67s0) between 2 nodes: no InfiniBand/RoCE transport was found"
    assert "NET/Socket : Using [0]enp67s0" in f["evidence"][0]
    assert commands(f)[:2] == ["ibv_devinfo", "export NCCL_DEBUG=INFO"]
    assert "--tp 8 --pp-size 2" in commands(f)


def test_nccl_sockets_on_one_node_or_ib_is_no_finding():
    for name in ("nccl-net-socket-selected.txt", "nccl-net-ib-detected-azure.txt"):
        r = analyze(FIX / "logs" / name)
        assert not [f for f in r["findings"] if f["code"] == "perf.slow_interconnect"], name


@pytest.mark.parametrize(
    "log",
    [
        FIX / "engine_args" / "v0.5.2-v0-medusa-specdecode-stats.log",
        FIX / "engine_args" / "v0.2.7-era-v0-awq-mixtral-startup-stats.log",
        FIX / "perf" / "v0.8.0rc3-v0-fallback-tp4-pcie-custom-allreduce-disabled.txt",
    ],
)
def test_the_start_up_advice_to_use_enforce_eager_is_not_eager_mode(log):
    """Healthy vLLM start-ups print "To run the model in eager mode, set 'enforce_eager=True' or use
    '--enforce-eager' in the CLI": advice, while the engine config says enforce_eager=False."""
    assert "use '--enforce-eager'" in log.read_text()
    assert "perf.eager_mode" not in {f["code"] for f in analyze(log)["findings"]}


def test_enforce_eager_in_the_launch_command_is_eager_mode(tmp_path):
    r = analyze(write(tmp_path, "notes.txt", "$ vllm serve m --enforce-eager \\\n    --gpu-memory-utilization 0.9\n"))
    assert "perf.eager_mode" in {f["code"] for f in r["findings"]}


def test_a_topo_matrix_pasted_after_the_engine_output_is_read():
    # one paste: the benchmark, `--tp 4`, then the environment report ending in "NVIDIA Topology:" (all PHB)
    r = analyze(FIX / "perf" / "sglang-0.2.13-tp4-a100-pcie-bench-env-topo.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.slow_interconnect" and top["title"].startswith("TP=4 all-reduces cross PCIe (PHB)")
    assert any("GPU0<->GPU1 = PHB" in e for e in top["evidence"])
    assert "--tp 2 --dp 2" in commands(top)  # SGLang's spelling of the replicas fix
    assert r["facts"]["gpus"]["topology"][3] == ["PHB", "PHB", "PHB", "X"]


def test_sglang_cutting_its_batch_cap_is_batching_limited():
    r = analyze(FIX / "perf" / "sglang-max-running-requests-reduced-128-to-50.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.batching_limited"
    assert top["title"] == "the engine cut its batch cap to 50 of the 128 requested: the KV cache holds no more"
    assert "max_running_requests was reduced from requested 128 to 50" in top["evidence"][0]
    # 128 asked for, 50 per replica: ceil(128 / 50) = 3 replicas, in SGLang's flags
    assert commands(top) == ["--dp 3", "--max-running-requests 50"]


def test_the_mamba_cache_cap_wording_takes_the_requested_cap_from_the_command(tmp_path):
    # SGLang's other wording (the same file): no requested value in the line, the launch command gives it
    log = write(tmp_path, "sglang.log",
                "python -m sglang.launch_server --model-path Qwen/Qwen3-Next-80B-A3B-Instruct --max-running-requests 64\n"
                "max_running_requests is capped to 24 by the mamba state cache (max_mamba_cache_size=72, 3 state slots per "
                "request). To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve the state "
                "size with --mamba-ssm-dtype bfloat16.\n")
    (f,) = [f for f in analyze(log)["findings"] if f["code"] == "perf.batching_limited"]
    assert f["title"].startswith("the engine cut its batch cap to 24 of the 64 requested: the mamba state cache")
    assert commands(f) == ["--dp 3", "--max-running-requests 24"]


def test_nccl_channels_through_shared_memory_are_slow_interconnect():
    r = analyze(FIX / "perf" / "vllm-0.4.1-tp2-nccl-channels-via-shm.txt")
    (f,) = [f for f in r["findings"] if f["code"] == "perf.slow_interconnect"]
    assert f["title"] == "NCCL runs without GPU peer-to-peer: every all-reduce goes through host memory"
    assert "Channel 00 : 0[73000] -> 1[d5000] via SHM/direct/direct" in f["evidence"][0]
    # tensor_parallel_size=2 in the engine config: TP 1 x DP 2
    assert commands(f) == ["nvidia-smi topo -p2p r", "--tensor-parallel-size 1 --data-parallel-size 2"]


def test_nccl_p2p_disable_named_in_a_log_is_slow_interconnect():
    r = analyze(FIX / "perf" / "vllm-tp2-rtx3090-nccl-p2p-disable-launcher.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.slow_interconnect" and "NCCL_P2P_DISABLE=1" in top["evidence"][0]
    assert commands(top) == ["nvidia-smi topo -p2p r"]  # no TP size in the paste: no replica count to compute


def test_llama_cli_quoted_in_a_report_with_thousands_of_threads_is_cpu_bound():
    r = analyze(FIX / "perf" / "llama-cli-t-6912-a100.txt")
    top = r["findings"][0]
    assert top["code"] == "perf.cpu_bound" and top["title"] == "-t 6912 asks for more CPU threads than the host has physical cores"
    assert top["evidence"] == ["llama.cpp threads (-t) = 6912"]
    # the host's cores are not in the paste: the fix is llama.cpp's own default, not a guessed count
    assert top["fixes"][0]["summary"].startswith("Drop -t 6912") and top["fixes"][0].get("command") is None


@pytest.mark.parametrize(("command", "fix"), [
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 8", "--tensor-parallel-size 1 --data-parallel-size 8"),
    ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 8", "--tp 1 --dp 8"),
    # TGI has no data-parallel flag: replicas are separate launchers, the fix sets what each one takes
    ("text-generation-launcher --model-id meta-llama/Llama-3.1-8B-Instruct --num-shard 8", "--num-shard 1"),
])
def test_a_tp_fix_speaks_the_flags_of_the_engine_it_came_from(tmp_path, command, fix):
    r = analyze(write(tmp_path, "cmd.txt", command + "\n"), FIX / "smi" / "nvidia-smi-table-8x-h100-sxm-driver565.txt")
    (f,) = [f for f in r["findings"] if f["code"] == "perf.tp_mismatch"]
    assert f["title"] == "TP=8 is more than this model needs: TP 1 holds it, 8 replicas would serve more"
    assert commands(f) == [fix]


@pytest.mark.parametrize(("engine", "settings", "want"), [
    ("vllm", [("tp", 2), ("dp", 2)], "--tensor-parallel-size 2 --data-parallel-size 2"),
    ("sglang", [("tp", 2), ("dp", 2)], "--tp 2 --dp 2"),
    ("tgi", [("tp", 2), ("dp", 2)], "--num-shard 2"),
    ("llamacpp", [("tp", 2), ("dp", 2)], None),  # llama.cpp splits layers: neither knob exists
    ("llamacpp", [("kv_dtype", "q8_0"), ("ctx", 8192), ("max_seqs", 4)], "-ctk q8_0 -ctv q8_0 -c 8192 --parallel 4"),
    ("sglang", [("kv_dtype", "fp8_e5m2"), ("ctx", 8192), ("mem", 0.85)], "--kv-cache-dtype fp8_e5m2 --context-length 8192 --mem-fraction-static 0.85"),
    ("tgi", [("kv_dtype", "fp8_e5m2"), ("ctx", 8192), ("batched_tokens", 4096)], "--kv-cache-dtype fp8_e5m2 --max-total-tokens 8192 --max-batch-prefill-tokens 4096"),
    ("ollama", [("max_seqs", 4)], None),  # Ollama's knobs are environment variables, not these flags
    ("", [("tp", 2)], "--tensor-parallel-size 2"),  # the engine not known: vLLM's spelling
])
def test_each_engine_gets_its_own_flags_or_none(engine, settings, want):
    from llm_doctor.checks.perf import facts_view as fv

    assert fv.command(engine, *settings) == want


def test_sglang_retractions_get_sglang_fixes_computed_from_its_command(tmp_path):
    log = FIX / "logs" / "sglang-decode-retract.log"
    (alone,) = [f for f in analyze(log)["findings"] if f["code"] == "perf.kv_cache_pressure"]
    # no command line: SGLang's own retract line says the engine; no cap or fraction to compute from
    assert commands(alone) == ["--kv-cache-dtype fp8_e5m2"]
    cmd = write(tmp_path, "cmd.txt", "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 16 "
                                     "--max-running-requests 64 --mem-fraction-static 0.8\n")
    (f,) = [f for f in analyze(cmd, log)["findings"] if f["code"] == "perf.kv_cache_pressure"]
    # half the cap it was given, the fraction 0.05 higher
    assert commands(f) == ["--max-running-requests 32", "--mem-fraction-static 0.85", "--kv-cache-dtype fp8_e5m2"]


def test_nvidia_smi_q_pasted_after_an_engine_log_is_read(tmp_path):
    """An engine log, then `nvidia-smi -q` as reporters paste it: the real H200 -q with its HW slowdown
    reasons switched on (as in test_throttled_under_load), after real vLLM V1 stat lines."""
    q = (FIX / "smi" / "nvidia-smi-q-1x-h200-driver550.txt").read_text()
    hot = (q.replace("        HW Slowdown                       : Not Active", "        HW Slowdown                       : Active")
           .replace("        SM                                : 345 MHz", "        SM                                : 1110 MHz"))
    log = (FIX / "stat_lines" / "vllm-v1-kv-full-43-waiting.log").read_text()
    r = analyze(write(tmp_path, "issue.txt", log + "\n$ nvidia-smi -q\n" + hot + "\nThe server is slow after an hour.\n"))
    (f,) = [f for f in r["findings"] if f["code"] == "perf.gpu_throttled"]
    assert "hw_slowdown" in f["title"] and "SM 1110 of 1980 MHz" in f["evidence"][0]


def test_a_pasted_clocks_event_section_alone_is_read():
    # one GPU's block of the real 2x A100 `-q -d PERFORMANCE`, its SW thermal slowdown switched on, after a log line
    section = (FIX / "smi" / "nvidia-smi-q-d-performance-2x-a100-pcie-clocks-event-reasons.txt").read_text().replace(
        "        SW Thermal Slowdown               : Not Active", "        SW Thermal Slowdown               : Active", 1)
    from llm_doctor.logparse import nvidia_smi

    lines = nvidia_smi.embedded_query("INFO 06-13 17:51:20 engine.py:300] Avg prompt throughput: 0.0 tokens/s\n"
                                      + section.split("GPU 00000000:8A:00.0")[0].split("GPU 00000000:12:00.0\n")[1])
    assert lines[0] == "    Clocks Event Reasons" and lines[-1].strip().startswith("Sparse Operation Mode")
    (gpu,) = nvidia_smi.parse_query(lines).gpus
    assert gpu.throttle_reasons == ["sw_thermal_slowdown"]  # Idle (active too) is not throttling


def test_llama_cpp_rpc_servers_are_the_interconnect(tmp_path: Path):
    paste = FIX / "perf" / "llama-server-rpc-4-remote-gpus.txt"
    r = analyze(paste)
    top = r["findings"][0]
    assert top["code"] == "perf.slow_interconnect"
    assert top["title"] == "layers run on 4 RPC server(s) on 1 other host(s): each token crosses the network"
    # the paste redacted the host (`<PRIVATE_IP_2>`): no command against a placeholder; the slow tokens are this
    # finding's symptom
    assert commands(top) == [None, None]
    assert [f["code"] for f in r["findings"]][:2] == ["perf.slow_interconnect", "perf.high_latency"]
    # with the address as the --rpc list names it, the link to measure is that host
    real = write(tmp_path, "rpc.txt", paste.read_text().replace("<PRIVATE_IP_2>", "10.0.0.7"))
    assert commands(analyze(real)["findings"][0]) == [None, "iperf3 -c 10.0.0.7"]


def test_ollama_ps_saying_the_model_runs_on_the_cpu_is_low_gpu_util(tmp_path):
    top = analyze(FIX / "perf" / "ollama-num-ctx-131072-100-cpu.txt")["findings"][0]
    assert top["code"] == "perf.low_gpu_util" and top["title"].startswith("Ollama runs 100% of the model on the CPU")
    assert "100%CPU" in top["evidence"][0]
    # `ollama ps` as cmd/cmd.go prints a split model ("%d%%/%d%% CPU/GPU")
    ps = write(tmp_path, "ps.txt", "NAME            ID              SIZE     PROCESSOR          UNTIL\n"
                                   "llama3.1:70b    711a9e8463af    49 GB    36%/64% CPU/GPU    4 minutes from now\n")
    (f,) = [f for f in analyze(ps)["findings"] if f["code"] == "perf.low_gpu_util"]
    assert f["title"].startswith("Ollama runs 36% of the model on the CPU") and commands(f) == ["ollama ps"]
    # "100% CPU" outside an Ollama paste is `top` or prose about the host, not this
    top_out = write(tmp_path, "top.txt", "  PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM\n"
                                        "python3 is at 100% CPU on one core while the vllm server waits\n")
    assert "perf.low_gpu_util" not in [f["code"] for f in analyze(top_out)["findings"]]


def test_nvidia_smi_query_gpu_csv_samples_are_read_and_an_idle_gpu_is_not_throttled(tmp_path):
    csv = FIX / "smi" / "nvidia-smi-query-gpu-csv-t4-idle-throttle-reasons.txt"
    r = analyze(csv)
    (gpu,) = r["facts"]["gpus"]["gpus"]
    assert gpu["util_gpu"] == {"min": 0, "mean": 0, "max": 0, "samples": 6}
    assert (gpu["sm_clock_mhz"], gpu["power_draw_w"], gpu["throttle_reasons"]) == (1695, 75.10, [])  # gpu_idle is not throttling
    assert "perf.gpu_throttled" not in [f["code"] for f in r["findings"]]
    # the same sampling, busy and power-capped (utilization, power and the sw_power_cap flag switched on), pasted in a report
    text = csv.read_text()
    busy = text.replace("0, 0 %, 71, 75.32 W, 1695 MHz, 6250 MHz, Not Active, Not Active, Not Active, Not Active, Active",
                        "0, 99 %, 83, 69.80 W, 1035 MHz, 6250 MHz, Not Active, Not Active, Active, Not Active, Not Active")
    r = analyze(write(tmp_path, "issue.txt", "Decode got slower after a few minutes. nvidia-smi while serving:\n" + busy))
    (f,) = [f for f in r["findings"] if f["code"] == "perf.gpu_throttled"]
    assert f["title"] == "1 GPU(s) throttled: sw_power_cap"
    assert f["evidence"] == ["GPU0: active sw_power_cap, 83 C"]
