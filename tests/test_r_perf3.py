"""Perf codes from the attachments of a thread, read as `llm-doctor analyze a b c` reads them: vLLM's
decode graph capture against a max_num_seqs off its capture sizes, and a benchmark table that compares
TP sizes per GPU. Each test asserts the code, the figure it rests on and the fix value."""

from __future__ import annotations

from llm_doctor.checks.perf.engine_log import lattice_below
from llm_doctor.logparse import tp_compare
from tests.analysis import codes, only, scenario


def _sub(tmp_path, name: str):
    folder = tmp_path / name
    folder.mkdir()
    return folder


# vllm-project/vllm PR 46329 (a comment's boot log): V1's FULL decode capture, one tqdm bar per mode
CAPTURE = """Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 4/4 [00:01<00:00,  3.10it/s]
Capturing CUDA graphs (decode, FULL): 100%|██████████| 3/3 [00:00<00:00,  4.02it/s]
"""


def test_a_max_num_seqs_off_the_capture_sizes_leaves_the_fullest_decode_batches_eager(tmp_path):
    found = scenario(tmp_path, vllm_log=CAPTURE, launch_sh="vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --max-num-seqs 6\n")
    eager = only(found, "perf.eager_mode")
    assert eager.title.startswith("decode batches of 5-6 requests have no captured CUDA graph")
    assert "Capturing CUDA graphs (decode, FULL)" in eager.evidence[0]
    assert "the largest on vLLM's capture lattice is 4" in eager.evidence[-1]
    assert [f.command for f in eager.fixes] == ["--max-num-seqs 8", "--cudagraph-capture-sizes 1 2 4 6"]


def test_a_max_num_seqs_on_the_capture_sizes_has_every_decode_batch_captured(tmp_path):
    for seqs in (8, 16, 256):
        found = scenario(_sub(tmp_path, str(seqs)), vllm_log=CAPTURE, launch_sh=f"vllm serve Qwen/Qwen3-8B --max-num-seqs {seqs}\n")
        assert "perf.eager_mode" not in codes(found)


def test_speculative_tokens_multiply_the_decode_step_and_capture_sizes_chosen_by_hand_are_not_judged(tmp_path):
    spec = "vllm serve m --max-num-seqs 5 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'\n"
    eager = only(scenario(_sub(tmp_path, "spec"), vllm_log=CAPTURE, launch_sh=spec), "perf.eager_mode")
    assert "up to 10 token(s)" in eager.evidence[-1] and eager.fixes[0].command == "--max-num-seqs 8"
    chosen = "vllm serve m --max-num-seqs 6 --cudagraph-capture-sizes 1 2 4 6\n"
    assert "perf.eager_mode" not in codes(scenario(_sub(tmp_path, "chosen"), vllm_log=CAPTURE, launch_sh=chosen))
    assert (lattice_below(6), lattice_below(300), lattice_below(260)) == (4, 288, 256)


def test_no_decode_capture_line_no_judgement(tmp_path):
    found = scenario(tmp_path, vllm_log="Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|█| 4/4\n",
                     launch_sh="vllm serve m --max-num-seqs 6\n")
    assert "perf.eager_mode" not in codes(found)


# SemiAnalysisAI/InferenceX PR 832: the benchmark bot's comparison comment
INFERENCEX = """### Results (1k1k, conc=4, TP=4/EP=4)

| Metric | TP=8/EP=8 | TP=4/EP=4 | Delta |
|--------|-----------|-----------|-------|
| Throughput/GPU | 107.4 tok/s/GPU | 145.1 tok/s/GPU | **+35.1%** |
| Output tput/GPU | 53.4 tok/s/GPU | 72.2 tok/s/GPU | **+35.2%** |
| Mean TTFT | 83.9 ms | 129.8 ms | +54.7% |
"""


def test_a_narrower_tp_serving_more_per_gpu_is_tp_wider_than_needed(tmp_path):
    tp = only(scenario(tmp_path, bench_txt=INFERENCEX), "perf.tp_mismatch")
    assert tp.title == "TP=8 is wider than the model needs: TP 4 serves 35% more per GPU"
    assert "107.4 at TP 8, 145.1 at TP 4 (1.35x)" in tp.evidence[1]
    assert tp.fixes[0].command == "--tensor-parallel-size 4 --data-parallel-size 2"


def test_a_sweep_of_tp_rows_is_divided_per_gpu_and_even_scaling_stays_quiet(tmp_path):
    rows = "| TP | Output token throughput (tok/s) | Mean TTFT (ms) |\n|---|---|---|\n| 1 | 1,000 | 90 |\n| 2 | 1,900 | 70 |\n| 4 | 3,700 | 60 |\n"
    assert [(p.tp, p.per_gpu) for p in tp_compare.points(rows)] == [(1, 1000.0), (2, 950.0), (4, 925.0)]
    assert "perf.tp_mismatch" not in codes(scenario(_sub(tmp_path, "even"), bench_txt=rows))
    flat = rows.replace("3,700", "2,000")
    tp = only(scenario(_sub(tmp_path, "flat"), bench_txt=flat), "perf.tp_mismatch")
    assert "500 at TP 4, 1000 at TP 1 (2.00x)" in tp.evidence[1]
    assert tp.fixes[0].command == "--tensor-parallel-size 1 --data-parallel-size 4"


def test_a_table_of_one_tp_size_or_latency_only_is_no_comparison():
    assert tp_compare.points("| Metric | TP=8 |\n|---|---|\n| Throughput | 100 |\n") == []
    assert tp_compare.points("| Metric | TP=8 | TP=4 |\n|---|---|---|\n| Mean TTFT (ms) | 80 | 120 |\n") == []
