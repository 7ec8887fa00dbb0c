"""The GPU-memory neighbours decided as codes.md decides them: an out-of-memory that no line places is
load.weights_oom when the numbers of PyTorch's own message show the weights held by the engine's own
allocator, and messages whose source raises them only while the weights are placed carry that phase."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of, written

# InternLM/lmdeploy#3646 (train k023): TurboMind's weights fill a 14.90 GiB Tesla P6 outside PyTorch
TURBOMIND = [
    "lmdeploy serve api_server internlm/internlm2_5-7b-chat --server-port 23333",
    "return torch._C._nn.pad(input, pad, mode, value)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 112.00 MiB. GPU 0 has a total capacity of 14.90 GiB "
    "of which 35.31 MiB is free. Including non-PyTorch memory, this process has 14.86 GiB memory in use. Of the "
    "allocated memory 336.00 MiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.",
]


def _oom(total: str, held: str, allocated: str, reserved: str) -> str:
    """PyTorch's OOM wording since 2.1 (c10/cuda/CUDACachingAllocator.cpp), with these numbers."""
    return (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 112.00 MiB. GPU 0 has a total capacity of "
            f"{total} of which 35.31 MiB is free. Including non-PyTorch memory, this process has {held} memory in use. "
            f"Of the allocated memory {allocated} is allocated by PyTorch, and {reserved} is reserved by PyTorch but "
            f"unallocated.")


def test_weights_outside_pytorch_lead(tmp_path) -> None:
    """14.53 GiB held outside PyTorch, next to a 13.0 GiB shard (7B at 16 bits): the weights, not serving."""
    found = findings_of(written(tmp_path, "\n".join(TURBOMIND) + "\n"))
    assert found[0].code == "load.weights_oom"
    phase = next(line for line in found[0].evidence if line.startswith("phase: weights"))
    assert "14.53 GiB of it outside PyTorch (336 MiB in PyTorch)" in phase
    assert "13.0 GiB weight shard (internlm2_5-7b-chat)" in phase
    assert "load.runtime_oom" not in [f.code for f in found]


def test_weights_in_pytorch_stay_unplaced(tmp_path) -> None:
    """PyTorch holding the process's memory (a PyTorch engine's own tensors) says nothing of another allocator:
    the OOM stays unplaced, runtime first and the weights after."""
    oom = _oom("14.90 GiB", "14.86 GiB", "13.52 GiB", "120.00 MiB")
    found = findings_of(written(tmp_path, f"{TURBOMIND[0]}\n{oom}\n"))
    assert [f.code for f in found[:2]] == ["load.runtime_oom", "load.weights_oom"]
    assert "phase: not placed (no loader frame, start-up milestone or serving line around it)" in found[0].evidence


def test_kv_cache_beside_the_weights_is_runtime(tmp_path) -> None:
    """78.57 GiB outside PyTorch on an 80 GB card is more than a 13.0 GiB shard's load could take (TurboMind's KV
    cache beside its weights): the weights had loaded."""
    oom = _oom("79.15 GiB", "78.90 GiB", "336.00 MiB", "0 bytes")
    found = findings_of(written(tmp_path, f"{TURBOMIND[0]}\n{oom}\n"))
    assert [f.code for f in found] == ["load.runtime_oom"]
    assert any("the process held 78.9 GiB, more than its 13.0 GiB weight shard" in line for line in found[0].evidence), \
        found[0].evidence


@pytest.mark.parametrize(("name", "line", "command"), [
    # huggingface/text-generation-inference launcher/src/main.rs: the weight files against free VRAM, before any shard
    ("tgi-not-enough-vram", "2024-12-10T10:00:00.000000Z  WARN text_generation_launcher: Not enough VRAM to run the "
     "model: Available: 20.19GB - Model 28.62GB.", "--num-shard 2"),
    # turboderp/exllamav2 model.py load_autosplit_gen: every module tried on every GPU while loading
    ("exllamav2-autosplit", "RuntimeError: Insufficient VRAM for model and cache", None),
    # turboderp/exllamav2 model.py set_device_map: the modules' weight footprint against a manual gpu_split
    ("exllamav2-gpu-split", "AssertionError: Insufficient space in device allocation", None),
])
def test_loader_messages_are_the_weights(tmp_path, name: str, line: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, [line], "load.weights_oom", "phase: weights", command)


def test_a_process_short_of_the_card_is_not_the_weights(tmp_path) -> None:
    """The same split on a 23.65 GiB card the process holds only 14.86 GiB of: other processes hold the rest
    (load.gpu_memory_occupied leads) and the numbers place nothing: runtime before the weights."""
    oom = _oom("23.65 GiB", "14.86 GiB", "336.00 MiB", "0 bytes")
    found = findings_of(written(tmp_path, f"{TURBOMIND[0]}\n{oom}\n"))
    assert [f.code for f in found[:3]] == ["load.gpu_memory_occupied", "load.runtime_oom", "load.weights_oom"]
    assert "8.76 GiB of 23.65 GiB is held by other processes (this process: 14.86 GiB)" in found[0].evidence


def test_exllamav2_fixes_are_its_loaders(tmp_path) -> None:
    """ExLlamaV2 has no tensor-parallel flag: the fixes are its loader's gpu_split, a shorter cache, fewer bits."""
    found = findings_of(written(tmp_path, "RuntimeError: Insufficient VRAM for model and cache\n"))
    whats = [f.summary for f in found[0].fixes]
    assert whats[0].startswith("Give the loader more GPU memory: a gpu_split")
    assert whats[1].startswith("Or a smaller cache: a lower max_seq_len")
    assert all(f.command is None for f in found[0].fixes)
