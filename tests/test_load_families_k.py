"""Load failures of the families the engines' and launchers' sources raise, that the doctor read as an
unrecognised failure before: Meta's reference loader's model-parallel shard count, a bare `assert` on a
per-rank split (Python prints only `AssertionError`; the statement under the last frame says what
failed), a scheduler's expert-parallel refusal. Each log is the source's message with its placeholders
filled, the source named beside each case."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one

TGI_ASSERT = [
    "2023-06-01T10:00:00.000000Z ERROR shard-manager: text_generation_launcher: Error when initializing model",
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.9/site-packages/text_generation_server/utils/layers.py", line 106, in __init__',
    "    assert in_features % self.tp_world_size == 0",
    "AssertionError",
]

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # meta-llama/llama@c769dfd llama/generation.py Llama.build: a 70B checkpoint in 8 consolidated shards, one process
    ("meta-llama-mp-shards", [
        "torchrun --nproc_per_node 1 example_text_completion.py --ckpt_dir llama-2-70b-chat/ --tokenizer_path tokenizer.model",
        "> initializing model parallel with size 1",
        "Traceback (most recent call last):",
        '  File "/home/user/llama/llama/generation.py", line 103, in build',
        "    assert model_parallel_size == len(",
        "AssertionError: Loading a checkpoint for MP=8 but world size is 1",
    ], "load.tp_invalid", "Loading a checkpoint for MP=8", "torchrun --nproc_per_node 8"),
    # text-generation-inference@v0.8.2 utils/layers.py TensorParallelRowLinear: a bare assert on the row split
    ("tgi-bare-assert-row-split", TGI_ASSERT, "load.tp_invalid", "assert in_features % self.tp_world_size == 0", None),
    # the same with the launcher's shard count: 2 is the largest size below 3 that the row split may take
    ("tgi-bare-assert-with-launch", [
        "text-generation-launcher --model-id tiiuae/falcon-40b-instruct --sharded true --num-shard 3",
        *TGI_ASSERT,
    ], "load.tp_invalid", "assert in_features % self.tp_world_size == 0", None),
    # text-generation-inference@v1.1.0 custom_modeling/bloom_modeling.py: heads over the shards
    ("tgi-bare-assert-heads", [
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.10/site-packages/text_generation_server/models/custom_modeling/bloom_modeling.py", '
        "line 756, in __init__",
        "    assert self.num_heads % self.tp_world_size == 0",
        "AssertionError",
    ], "load.tp_invalid", "num_heads % self.tp_world_size", None),
    # gpustack@47277d7 ascend_mindie_resource_fit_selector.py: the scheduler's refusal of an expert split
    ("gpustack-moe-experts", [
        "Model's MoE experts (60) must be divisible by the --moe-expert-parallel-size (8).",
    ], "load.tp_invalid", "MoE experts (60)", None),
    # the same words in a MoE runtime's own check
    ("experts-over-ep", [
        "ValueError: Number of experts (60) must be divisible by expert parallel size (8).",
    ], "load.tp_invalid", "Number of experts (60)", None),
    # transformers@008e574 configuration_utils.py _get_config_dict: no config.json where the name points
    ("transformers-cant-load-configuration", [
        "vllm serve /models/Qwen2.5-7B",
        "OSError: Can't load the configuration of '/models/Qwen2.5-7B'. If you were trying to load it from "
        "'https://huggingface.co/models', make sure you don't have a local directory with the same name. Otherwise, make "
        "sure '/models/Qwen2.5-7B' is the correct path to a directory containing a config.json file",
    ], "load.model_files", "Can't load the configuration of '/models/Qwen2.5-7B'", None),
    # transformers@00511f2 utils/hub.py cached_files: shards named by the index are not in the folder or cache
    ("transformers-shards-missing", [
        "OSError: nvidia/LocateAnything-3B does not appear to have files named ('model-00001-of-00002.safetensors', "
        "'model-00002-of-00002.safetensors'). Checkout 'https://huggingface.co/nvidia/LocateAnything-3B/tree/main' for "
        "available files.",
    ], "load.model_files", "does not appear to have files named", None),
    # the Hub's 403 for a fine-grained token without the gated-repos scope (huggingface_hub utils/_http.py relays it)
    ("hub-fine-grained-token", [
        "huggingface_hub.errors.HfHubHTTPError: 403 Forbidden: Please enable access to public gated repositories in your "
        "fine-grained token settings to view this repository.",
    ], "load.model_files", "fine-grained token settings", "huggingface-cli login"),
    # pytorch@v2.4.0 torch/nn/modules/module.py load_state_dict: the checkpoint lacks the model's parameters
    ("torch-state-dict-missing-keys", [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py", line 2189, in load_state_dict',
        "RuntimeError: Error(s) in loading state_dict for PeftModelForCausalLM:",
        '\tMissing key(s) in state_dict: "base_model.model.lm_head.weight".',
    ], "load.model_files", "Error(s) in loading state_dict for PeftModelForCausalLM", None),
    # sentencepiece@v0.2.0 sentencepiece.i: LoadFromFile(None), the tokenizer.model the slow tokenizer needs is absent
    ("sentencepiece-no-vocab-file", [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.10/dist-packages/transformers/models/llama/tokenization_llama.py", line 171, in '
        "get_spm_processor",
        "    tokenizer.Load(self.vocab_file)",
        '  File "/usr/local/lib/python3.10/dist-packages/sentencepiece/__init__.py", line 316, in LoadFromFile',
        "    return _sentencepiece.SentencePieceProcessor_LoadFromFile(self, arg)",
        "TypeError: not a string",
    ], "load.model_files", "TypeError: not a string", None),
    # transformers@787bd8b quantizers/quantizer_awq.py validate_environment: the library the method's kernels come from
    ("transformers-awq-needs-autoawq", [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/site-packages/transformers/quantizers/quantizer_awq.py", line 50, in validate_environment',
        "ImportError: Loading an AWQ quantized model requires auto-awq library (`pip install autoawq`)",
    ], "load.quantization_unsupported", "requires auto-awq library", "pip install autoawq"),
    # transformers@3719481 quantizers/quantizer_gptq.py
    ("transformers-gptq-needs-optimum", [
        "ImportError: Loading a GPTQ quantized model requires optimum (`pip install optimum`)",
    ], "load.quantization_unsupported", "requires optimum", "pip install optimum"),
    # vllm@v0.6.3 attention/backends/flash_attn.py imports from the vllm-flash-attn build that ships with the wheel
    ("vllm-flash-attn-import", [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/site-packages/vllm/attention/backends/flash_attn.py", line 23, in <module>',
        "ImportError: cannot import name 'flash_attn_varlen_func' from 'vllm.vllm_flash_attn' (unknown location)",
    ], "load.cuda_mismatch", "from 'vllm.vllm_flash_attn'", None),
    # pytorch@v2.4.0 torch/utils/cpp_extension.py _check_cuda_version: the host compiler outside CUDA's range
    ("torch-cpp-extension-compiler", [
        "RuntimeError: The current installed version of g++ (13.2.0) is greater than the maximum required version by CUDA "
        "11.3. Please make sure to use an adequate version of g++ (>=5.0.0, <11.0).",
    ], "load.cuda_mismatch", "greater than the maximum required version by CUDA 11.3", None),
    # text-generation-inference@v1.1.0 router/src/validation.rs MaxTotalTokens: 3500 + 1024 above --max-total-tokens 4096
    ("tgi-validation-total-tokens", [
        "ERROR text_generation_router::infer: router/src/infer.rs:123: `inputs` tokens + `max_new_tokens` must be <= 4096. "
        "Given: 3500 `inputs` tokens and 1024 `max_new_tokens`",
    ], "load.config_invalid", "must be <= 4096", "--max-total-tokens 4524"),  # checks/load/config.py _tgi_limits: prompt + answer
]


@pytest.mark.parametrize("name,lines,code,evidence,command", CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path, name, lines, code, evidence, command) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_an_xformers_build_for_another_torch_is_a_warning_of_the_cuda_stack(tmp_path) -> None:
    """xformers@9be7f8d _cpp_lib.py logs it and goes on: the CUDA stack's finding, below an error the log states."""
    from tests.analysis import findings_of, written

    log = written(tmp_path, "\n".join([
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:",
        "    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.2.0+cu121)",
        "    Python  3.10.13 (you have 3.10.12)",
    ]) + "\n")
    top = findings_of(log)[0]
    assert top.code == "load.cuda_mismatch"
    assert any("xFormers can't load C++/CUDA extensions" in line for line in top.evidence)


def test_a_bare_exception_that_names_no_split_stays_unrecognised(tmp_path) -> None:
    """The statement is read only for the families' words: an assert on anything else is no parallel layout."""
    from tests.analysis import findings_of, written

    log = written(tmp_path, "\n".join([
        "Traceback (most recent call last):",
        '  File "/srv/app/loader.py", line 12, in load',
        "    assert os.path.exists(path)",
        "AssertionError",
    ]) + "\n")
    assert findings_of(log)[0].code == "load.unrecognized_failure"
