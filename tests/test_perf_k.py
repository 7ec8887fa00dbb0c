"""Perf codes from the attachments of one report read together (engine log, launch command, notes),
as `llm-doctor analyze a b c` reads them: the code, the number it rests on and the fix value."""

from __future__ import annotations

from llm_doctor.findings import STATEMENT
from llm_doctor.logparse import perf_prose
from tests.analysis import codes, only, scenario

# vllm-project/vllm#26876 (corpus j020): the OOM during inference and the launch command beside it
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 232.00 MiB. GPU 0 has a total capacity of 23.57 GiB "
       "of which 154.25 MiB is free. Including non-PyTorch memory, this process has 23.40 GiB memory in use. Of the allocated "
       "memory 22.88 GiB is allocated by PyTorch, and 188.29 MiB is reserved by PyTorch but unallocated.\n")
LAUNCH = ("python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-VL-4B-Instruct --max-model-len 32768 "
          "--tensor-parallel-size 1 --gpu-memory-utilization {share} --dtype float16 --port 7001\n")


def test_an_oom_with_a_high_share_is_the_oom_first_and_the_share_beside_it(tmp_path):
    found = scenario(tmp_path, engine_log=OOM, launch_sh=LAUNCH.format(share="0.95"))
    assert codes(found)[:2] == ["load.runtime_oom", "perf.memory_overcommitted"]
    share = only(found, "perf.memory_overcommitted")
    assert share.evidence[0] == "gpu_memory_utilization=0.95 (cmdline)"
    assert share.fixes[0].command == "--gpu-memory-utilization 0.90"
    assert "load.runtime_oom" not in share.explains


def test_an_oom_cured_by_a_lower_share_is_memory_overcommitted_first(tmp_path):
    # vllm-project/vllm-ascend (corpus j022): the reporter's own account of what cured the OOM
    notes = ("Today when I test the inference of Qwen2.5-Math-7B-Instruct on one card (TP=PP=1) it reported the OOM error.\n\n"
             "Then I found that the OOM could be solved when reduce `gpu_memory_utilization` from 0.96 to 0.8.\n")
    found = scenario(tmp_path, engine_log=OOM, notes_md=notes)
    top = found[0]
    assert top.code == "perf.memory_overcommitted" and top.tier == STATEMENT
    assert "load.runtime_oom" in codes(found) and "load.runtime_oom" in top.explains
    assert "(0.96)" in top.title
    assert any("from 0.96 to 0.8" in e for e in top.evidence)
    assert top.fixes[0].command == "--gpu-memory-utilization 0.80"


def test_a_share_named_too_high_for_an_oom_is_the_cause_with_the_engines_flag(tmp_path):
    # vllm-project/vllm#19186 (title) and SGLang's name of the share
    found = scenario(tmp_path, issue_md="[Bug]: Setting gpu-memory-utilization too high can cause OOM\n")
    assert found[0].code == "perf.memory_overcommitted" and found[0].fixes[0].command == "--gpu-memory-utilization 0.90"
    found = scenario(tmp_path, issue_md="The OOM went away after we lowered --mem-fraction-static to 0.8 on the 4 H100s.\n")
    assert found[0].code == "perf.memory_overcommitted" and found[0].fixes[0].command == "--mem-fraction-static 0.80"


def test_a_share_the_reporter_lowered_below_the_limit_is_judged_by_their_account(tmp_path):
    # a co-located training job: 0.3 is below any threshold, yet lowering it ended the failures (corpus g113)
    text = ("- Reduces `gpu_memory_utilization` from `0.3` to `0.25` in `test_mtp_online_regression` to prevent CUDA launch "
            "failures caused by GPU memory pressure when running vLLM 0.25.1 alongside MTP training on a single H100\n")
    found = scenario(tmp_path, pr_md=text)
    top = found[0]
    assert top.code == "perf.memory_overcommitted" and "(0.3)" in top.title
    assert top.fixes[0].command == "--gpu-memory-utilization 0.25"


def test_advice_and_a_higher_share_state_no_cure():
    for sentence in ("You should try lowering gpu_memory_utilization to 0.8 to avoid the OOM.",
                     "The OOM at start-up went away when I raised gpu_memory_utilization from 0.8 to 0.9.",
                     "We run gpu_memory_utilization 0.9 and the OOM happens with long prompts."):
        assert not [s for s in perf_prose.statements("t.md", sentence) if s.measures.get("oom_cured")], sentence


def test_gpu_load_said_the_other_way_round_for_two_setups_names_the_low_one(tmp_path):
    # LostRuins/koboldcpp#2347: the console head and the reporter's two lines (one GPU, then two)
    console = ("***\nWelcome to KoboldCpp - Version 1.117.1\n***\nAuto Selected CUDA Backend (flag=0)\n"
               "Detected Available GPU Memory: 23040 MB\nDetected Available RAM: 2733 MB\n")
    notes = ("koboldcpp 1.117.1\nWindows 10 Ent\n\nUse 1 GPU: speed 140 Token/s, load GPU 90-100%\n"
             "Use 1 and 2 GPU: speed 12 Token/s, load GPU 5-10%\n")
    found = scenario(tmp_path, koboldcpp_log=console, notes_txt=notes)
    low = only(found, "perf.low_gpu_util")
    assert low.tier == STATEMENT and any("load GPU 5-10%" in e for e in low.evidence)
    (said,) = [s for s in perf_prose.statements("n", notes) if s.code == "perf.low_gpu_util"]
    assert said.measures == {"gpu_util_percent": 10.0}


def test_gpu_busy_readings_take_the_one_said_to_be_low():
    # ggml-org/llama.cpp (corpus j034): amdgpu's sysfs counter, read for two servers
    text = ("This is further confirmed by directly reading the kernel driver's GPU busy from "
            "/sys/class/drm/card1/device/gpu_busy_percent Which reads 99% for `llama.cpp` and only 35% for `llama-cpp-python`")
    (said,) = perf_prose.statements("t", text)
    assert said.code == "perf.low_gpu_util" and said.measures == {"gpu_util_percent": 35.0}
    (said,) = perf_prose.statements("t", "The GPU is only 30% utilized while the server decodes.")
    assert said.measures == {"gpu_util_percent": 30.0}


def test_a_pegged_process_is_the_cpu_held_busy(tmp_path):
    # ggml-org/llama.cpp (corpus j034): htop's view of the Python server
    found = scenario(tmp_path, issue_md="In `htop` it can be observed that the `llama-cpp-python` server is completely pegging the "
                                        "main python process, while the GPU remains mostly idle.\n")
    assert found[0].code == "perf.cpu_bound" and found[0].tier == STATEMENT
    assert found[0].fixes[0].command == "top -b -n 1 -c | head -30; nproc"


def _v1_table(command: str, busbw: float) -> str:
    """A run of NCCL 1.x's own all_reduce_test as a thread pastes it: the command, its `N type op` header and the row
    (NVIDIA/nccl test/single/all_reduce_test.cu prints `  %7.3f  %5.2f  %5.2f` for time, algbw, busbw)."""
    time = 10000000 / busbw / 1e6
    return (f"```\n{command}\n       N    type      op     time  algbw  busbw\n"
            f"10000000    char     sum  {time:7.3f}  {busbw:5.2f}  {busbw:5.2f}\n```\n")


def test_nccl_1x_all_reduce_below_any_pcie_path_is_slow_interconnect(tmp_path):
    # NVIDIA/nccl#44: Maxwell TitanX pairs reach 11.28 GB/s, the Pascal cards in the same slots 1.77 GB/s
    text = ("When running your benchmark on the Maxwell cards I get pretty much the expected numbers:\n"
            + _v1_table("./build/test/single/all_reduce_test 10000000 2 0 1", 11.28)
            + "I get about a 6x slowdown running on the exact same system but with Pascal instead of Maxwell cards.\n"
            + _v1_table("./build/test/single/all_reduce_test 10000000 2 0 1", 1.77))
    found = scenario(tmp_path, bench_txt=text)
    top = found[0]
    assert top.code == "perf.slow_interconnect" and top.severity == "warn"
    assert "1.77 GB/s between 2 GPUs in one node" in top.title
    assert any("busbw 11.28 GB/s" in e for e in top.evidence)
    assert top.fixes[0].command.startswith("nvidia-smi topo -p2p r")
    # "a 6x slowdown" is the speed's word, not a clock's
    assert "perf.gpu_throttled" not in codes(found)


def test_nccl_1x_all_reduce_at_pcie_speed_stays_quiet(tmp_path):
    found = scenario(tmp_path, bench_txt=_v1_table("./build/test/single/all_reduce_test 10000000 2 0 7", 8.23))
    assert not [f for f in found if f.code.startswith("perf.")]


def test_gpus_on_different_root_complexes_is_the_link_and_a_denied_power_cap_is_not_throttling(tmp_path):
    # noonghunna/club-3090#1098: the maintainer's reading of a TP=2 decode that fell 38 % after a board swap
    notes = ("Short version: it's **not bandwidth or the power cap** — your two GPUs landed on **different PCIe root "
             "complexes**, and the TP=2 all-reduce collapses across that split.\n")
    found = scenario(tmp_path, notes_txt=notes)
    assert codes(found) == ["perf.slow_interconnect"]
    assert found[0].fixes[0].command == "nvidia-smi topo -m"


def test_the_api_server_against_the_offline_path_on_the_same_gpu_is_the_servers_cpu_work(tmp_path):
    # vllm-project/vllm#580: offline 90-100 % GPU utilisation, through the OpenAI API server 50 %
    notes = ("On 1xA100 Llama 13B, the `LLM` class reaches 90~100% GPU utilization, while the API server can only utilize 50%\n")
    found = scenario(tmp_path, notes_txt=notes)
    assert codes(found) == ["perf.cpu_bound"]
    assert found[0].tier == STATEMENT and any("the API server can only utilize 50%" in e for e in found[0].evidence)
    # the offline path alone, or a server said as fast, states no gap
    assert not perf_prose.statements("t", "The API server and the `LLM` class run at the same speed on this A100.")


def test_a_gpu_stuck_in_a_low_power_state_is_said_throttled():
    (said,) = perf_prose.statements("t", "The GPU is stuck in a low-power state under load: decode runs at 42 tok/s.")
    assert said.code == "perf.gpu_throttled"


def test_tp_across_nodes_by_the_launch_command_alone_is_tp_mismatch(tmp_path):
    # sgl-project/sglang#1338: Qwen2-7B with --tp 2 --nnodes 2, one RTX 3090 per machine, ~24 tok/s for one request
    launch = ("python3 -m  sglang.launch_server --model-path  /models/Qwen2-7B-Instruct  --host 0.0.0.0  --port  30000 "
              "--nccl-init  sgl-dev-0:30005  --nnodes  2  --node-rank  0 --tp  2   --mem-fraction-static  0.7 \n")
    log = ("[10:22:51 TP0] Decode batch. #running-req: 1, #token: 495, token usage: 0.00, gen throughput (token/s): 23.83, "
           "#queue-req: 0\n") * 3
    found = scenario(tmp_path, launch_sh=launch, engine_log=log)
    top = found[0]
    assert top.code == "perf.tp_mismatch" and top.title == "TP=2 spans 2 nodes: 1 GPU(s) of each TP group per node"
    assert "nnodes=2 (cmdline)" in top.evidence[0]
    assert top.fixes[0].command == "--tp 1 --pp-size 2"
    # TP inside the node, PP across: nothing to say
    quiet = scenario(tmp_path, launch_sh="vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 8 "
                                         "--pipeline-parallel-size 2 --nnodes 2 --node-rank 0\n")
    assert "perf.tp_mismatch" not in codes(quiet)


def test_throughput_that_grows_less_than_the_gpus_added_is_tp_mismatch():
    # vllm-project/vllm#6938: Llama 3 70B over tp=8 x pp=8 (64 GPUs)
    (said,) = perf_prose.statements("t", "I get about 6x the through put for 8x the compute. So not too bad.")
    assert said.code == "perf.tp_mismatch" and said.measures == {"scaling": 0.75}
    assert not perf_prose.statements("t", "We get 7.8x the throughput for 8x the GPUs with data parallelism.")


CAP_SWEEP = """| Cap | Output throughput | Median TTFT | P99 TTFT | Median TPOT |
| ---: | ---: | ---: | ---: | ---: |
| 4 (before) | 40.8 tok/s | 1,024 ms | 2,500 ms | 92 ms |
| 16 (after) | 133.8 tok/s | 3,310 ms | 5,828 ms | 105 ms |
| 32 | 235.5 tok/s | 4,778 ms | 9,917 ms | 116 ms |
"""


def test_a_cap_sweep_whose_throughput_keeps_up_with_the_cap_is_batching_limited(tmp_path):
    # the emmy serving recipe's PR (corpus i037): the cap swept 4 -> 16 -> 32
    found = scenario(tmp_path, pr_md="Sweeping the cap shows throughput rising almost linearly with it.\n\n" + CAP_SWEEP)
    top = found[0]
    assert top.code == "perf.batching_limited" and top.severity == "warn"
    assert "(72% of linear): a cap of 4" in top.title
    assert "5.8x the throughput for 8x the cap" in top.evidence[0]
    assert top.fixes[0].command == "--max-num-seqs 32"
    # the TTFT that grows with the cap is the sweep's load, not a regression between rows
    assert not [s for s in perf_prose.statements("t", CAP_SWEEP) if "latency_ratio" in s.measures]


def test_a_cap_sweep_that_flattens_is_no_batching_limit():
    flat = CAP_SWEEP.replace("133.8", "60.1").replace("235.5", "62.0")
    assert not [s for s in perf_prose.statements("t", flat) if "cap_scaling" in s.measures]


def test_a_stale_weight_offload_is_the_gpus_waiting_on_pcie_and_the_sentence_blocks_no_perf_check(tmp_path):
    # vllm-project/vllm#57771: DeepSeek-V4.1-Flash on 8x H20 kept --cpu-offload-gb 35 from a 4-card setup
    notes = ("We hit this on DeepSeek-V4.1-Flash on 8×H20: a stale default of `--cpu-offload-gb 35` (left over from a 4-card "
             "setup where weights did NOT fit) dropped throughput from **2434 to 120 tok/s (~19x)** at conc64 once the same "
             "model was migrated to 8 cards where all 510 GB fit in VRAM. Nothing in the docs hints at this failure mode.\n")
    found = scenario(tmp_path, notes_txt=notes)
    low = only(found, "perf.low_gpu_util")
    assert low.title.startswith("cpu_offload_gb=35: part of the weights stream over PCIe")
    assert low.fixes[0].command == "--cpu-offload-gb 0"
    # the same flag on a launch command, without the story
    found = scenario(tmp_path, launch_sh="vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 4 --cpu-offload-gb 20\n")
    low = only(found, "perf.low_gpu_util")
    assert low.evidence[0] == "cpu_offload_gb=20 (cmdline)" and low.fixes[1].command == "--tensor-parallel-size 8"


def test_a_perf_problem_called_a_failure_does_not_block_the_perf_checks(tmp_path):
    # NVIDIA DGX Spark (corpus/perf sglang-dgx-spark-...-pr55): the PR's first line calls the low-power state a failure
    found = scenario(tmp_path, notes_txt="Adds a first-party candidate for the NVIDIA DGX Spark / GB10 low-power stuck-state "
                                         "failure observed during the Ornith 1.5 Cruz reproduction.\n")
    assert "perf.gpu_throttled" in codes(found)
    # a sentence that says the engine went down still blocks them
    down = scenario(tmp_path, notes_txt="The server crashed with a failure after the GPU got stuck in a low-power state.\n")
    assert "perf.gpu_throttled" not in codes(down)


def test_advice_to_lower_the_share_is_no_cure():
    assert not perf_prose.statements("t", "To avoid OOM on a 24 GB card, lower --gpu-memory-utilization and --max-model-len")


def test_a_decode_speed_said_low_is_its_inter_token_latency(tmp_path):
    found = scenario(tmp_path, issue_md="I only get 5 tok/s with Llama 3 70B on 2x A100, a single request.\n")
    latency = only(found, "perf.high_latency")
    assert "200 ms per output token" in latency.title
    for sentence, itl in (("Generation speed is only 3 tokens per second on the 4090.", 0.333333),
                          ("It takes 40 seconds to generate 200 tokens.", 0.2)):
        (said,) = perf_prose.statements("t", sentence)
        assert said.code == "perf.high_latency" and said.measures == {"itl_s": itl}, sentence
    # a prefill speed, an aggregate throughput and a speed not called low are no decode complaint
    for sentence in ("Prompt processing is only 50 tok/s on the CPU.", "With 64 concurrent requests we reach 2400 tokens/s.",
                     "We get 45 tok/s generation on a single 4090, which is fine."):
        assert not perf_prose.statements("t", sentence), sentence


def test_other_wordings_of_ttft_batch_cap_and_share():
    (said,) = perf_prose.statements("t", "The first token takes 12 seconds to arrive.")
    assert said.measures == {"ttft_s": 12.0}
    (said,) = perf_prose.statements("t", "Requests are queued and only 2 run at a time.")
    assert said.code == "perf.batching_limited" and said.measures == {"running": 2.0}
    # a number that ends the sentence is the flag's value
    (said,) = perf_prose.statements("t", "max_num_seqs is set to 1.")
    assert said.measures == {"max_num_seqs": 1.0}
    (said,) = perf_prose.statements("t", "GPU memory usage is 79GB of 80GB with gpu_memory_utilization 0.98.")
    assert said.code == "perf.memory_overcommitted" and said.measures == {"memory_share": 0.98}


def test_the_host_cpu_said_to_be_the_bottleneck_in_other_words():
    for sentence in ("One CPU core is maxed out and the others are idle.",
                     "The bottleneck is the CPU: the scheduler overhead dominates for small models.",
                     "The Python GIL limits throughput in the API server."):
        assert [s.code for s in perf_prose.statements("t", sentence)] == ["perf.cpu_bound"], sentence
    for sentence in ("The GPU is saturated at 99% and the CPU is fine.", "CPU core count: 64, RAM 512 GB."):
        assert not perf_prose.statements("t", sentence), sentence


def test_idle_gpus_and_tp_across_machines_said_in_words_are_tp_mismatch(tmp_path):
    found = scenario(tmp_path, issue_md="I have 8 GPUs but vLLM only uses one of them.\n")
    tp = only(found, "perf.tp_mismatch")
    assert tp.tier == STATEMENT
    assert tp.fixes[0].command == "nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv"
    (said,) = perf_prose.statements("t", "Tensor parallelism across two nodes is very slow.")
    assert said.code == "perf.tp_mismatch" and said.measures == {"across_nodes": 1.0}
    # "TP=1." ends the sentence: still the one-GPU comparison
    assert {s.code for s in perf_prose.statements("t", "Running TP=8 with a 7B model is not faster than TP=1.")} == {
        "perf.tp_mismatch", "perf.slow_interconnect"}
    for sentence in ("When the server is idle the GPUs draw 60 W.", "We split the layers across 2 nodes with pipeline parallelism."):
        assert not perf_prose.statements("t", sentence), sentence
