"""Are the engine arguments valid? (argparse rejects a flag or value; a context length above what
the model's config allows; a launch command with a value no engine accepts, like TP 0 or a
negative context length). The fix names the value the engine itself derived."""

from __future__ import annotations

import json
import math

from llm_doctor import engine_flags
from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView


@check("load.config", "load", codes=["load.config_invalid"], any_of=["logs", "deployment"], events=["config_invalid", "context_exceeded"])
def config(facts: Facts, log: LogView | None) -> Outcome:
    """The engine accepted its arguments."""
    found = log.events("config_invalid") if log else []
    # (a refusal the client relays is the access layer's: checks/access/client_log.py)
    longer = [e for e in log.events("context_exceeded") if not le.relayed(e, log.logs.engine)] if log else []
    if longer and not found:
        return Outcome([context_finding(facts, log, longer)])
    if not found:
        return _launch_values(facts)
    e = found[-1]
    v = e.values
    evidence = le.evidence(found) + (log.earlier_runs() if log else [])
    engine = le.engine(facts) or le.template_engine(e)
    if "smem_available" in v:
        title, fixes = _shared_memory(v)
    elif engine in ENGINE_LIMITS and ("derived" in v or "below" in v):
        title, fixes = _engine_limit(engine, v)
    elif "derived" in v:
        flag = "--context-length" if v.get("field") == "context_length" else "--max-model-len"
        fixes = [Fix(f"Use at most the model's own limit ({v['derived']})", f"{flag} {v['derived']}"),
                 Fix("Or, when the model really supports more (RoPE scaling), allow it explicitly",
                     "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" if engine != "sglang" else "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")]
        title = f"{v.get('field')} {v.get('value')} is above the model's limit {v['derived']}"
    elif "encoder_tokens" in v:  # vLLM V1's input processor: one multimodal item above the encoder cache
        title, fixes = _encoder_cache(v)
    elif "mamba_blocks" in v:  # vLLM's compilation config: a hybrid model's decode graphs need one Mamba block per sequence
        title, fixes = _mamba_blocks(v)
    elif SCHEDULER_KEYS & set(v):
        title, fixes = _scheduler(v)
    elif "modality" in v and "needed" in v:  # vLLM's per-prompt cap on images/videos/audios (1 by default)
        limit = json.dumps({v["modality"]: v["needed"]})
        fixes = [Fix(f"Allow {v['needed']} {v['modality']} items per prompt (if the model takes that many)", f"--limit-mm-per-prompt '{limit}'")]
        title = f"a prompt carries {v['needed']} {v['modality']} items, above --limit-mm-per-prompt"
    elif "modality" in v and "allowed" in v:  # vLLM's chat parser names only the cap, not how many items the request carried
        limit = json.dumps({v["modality"]: int(v["allowed"]) + 1})  # type: ignore[call-overload]
        fixes = [Fix(f"Raise --limit-mm-per-prompt for {v['modality']} above {v['allowed']} to the most items one request sends "
                     "(if the model takes that many), or send fewer per request", f"--limit-mm-per-prompt '{limit}'")]
        title = f"a request carries more {v['modality']} items than --limit-mm-per-prompt allows ({v['allowed']})"
    elif "setting" in v and "needed" in v:  # a setting below what the engine says it must hold (vLLM's max_num_batched_tokens, max_lora_rank)
        flag = "--" + str(v["setting"]).replace("_", "-")
        fixes = [Fix(f"Raise {flag} to {v['needed']}, the value the engine's message names", f"{flag} {v['needed']}")]
        title = f"{v['setting']} {v.get('value')} is below the {v['needed']} the engine needs"
    elif "choices" in v and "value" in v:  # a name the engine does not know, with the ones it does (vLLM's tool/reasoning parsers)
        fixes = [Fix(f"Use one of the names this engine version accepts instead of {v['value']}: {str(v['choices']).strip()}")]
        title = f"the engine does not know {v['value']}"
    elif "missing" in v:  # a feature the engine serves only when started with flags it names (vLLM's auto tool choice, llama-server's --jinja)
        missing = str(v["missing"]).strip("`'\" ")
        missing = missing if missing.startswith("-") else "--" + missing.replace(" ", "-")  # "chat template" -> --chat-template
        fixes = [Fix(f"Start the engine with {missing} (its --help lists the accepted values)")]
        title = f"the engine needs {missing}"
    elif "reason" in v:  # vLLM's attention-backend selector refused the model, GPU and KV-cache dtype it was given
        forced = f" ({v['backend']})" if v.get("backend") else ""
        fixes = [Fix(f"Let the engine choose its attention backend: remove --attention-backend / VLLM_ATTENTION_BACKEND{forced}, "
                     f"or the setting the reason names ({v['reason']}), e.g. a forced --kv-cache-dtype"),
                 Fix("Or upgrade the engine: newer versions add backends for more GPUs, head sizes and KV dtypes",
                     engine_flags.UPGRADE.get(engine or "vllm"))]
        title = (f"the attention backend {v['backend']} refuses this configuration: {v['reason']}" if v.get("backend")
                 else f"no attention backend accepts this configuration: {v['reason']}")
    elif "arch" in v:  # a model class the engine cannot serve with a feature that is on (vLLM's LoRA)
        fixes = [Fix("Serve this model without the feature (for LoRA: drop --enable-lora and merge the adapter into the weights)"),
                 Fix("Or upgrade the engine: newer releases add the feature to more model classes", engine_flags.UPGRADE.get(engine or "vllm"))]
        title = f"{v['arch']} does not support a feature the engine was started with"
    elif "argument" in v:  # the engine could not infer a value and asks for it (LMDeploy's model_name)
        flag = "--" + str(v["argument"]).replace("_", "-")
        fixes = [Fix(f"Pass {flag} explicitly (the engine's --help lists the values): it could not infer it from the model folder")]
        title = f"the engine needs {flag}, which it could not infer"
    elif "flash_attn" in " ".join(e.lines) or "requires Flash Attention" in " ".join(e.lines):
        fixes = [Fix("A quantized V cache (and -sm tensor) needs flash attention: turn it on, or keep the V cache f16",
                     "OLLAMA_FLASH_ATTENTION=1" if engine == "ollama" else "-fa on")]
        title = "the engine arguments need flash attention, which is off"
    else:
        flag = str(v.get("flag") or "").strip("`' ")
        fixes = [Fix(f"Remove or rename {flag or 'the rejected argument'}; see `--help` of this engine version for the accepted spelling")]
        if flag.startswith("--") and "_" in flag:
            fixes.insert(0, Fix("Flags use dashes, not underscores", flag.split()[0].replace("_", "-")))
        title = f"the engine rejected its arguments{f': {flag}' if flag else ''}"
    return Outcome([Finding("load.config_invalid", title, evidence, fixes, explains=le.CLIENT_SYMPTOMS)])


def _shared_memory(v: dict) -> tuple[str, list[Fix]]:
    """vLLM 0.2's paged attention v1 holds the whole padded context's float32 logits in one block's shared memory
    (vllm/utils.py check_if_can_support_max_seq_len: padded_len * 4 > max_shared_mem raises): the longest context
    that fits is the shared memory over 4 bytes, rounded down to whole KV blocks."""
    block = int(v["block"])
    fits = int(v["smem_available"]) // 4 // block * block
    return (f"max_model_len {v['value']} needs {v['smem_required']:g} bytes of shared memory, the GPU has {v['smem_available']}",
            [Fix(f"Use a context that fits this GPU's shared memory ({v['smem_available']} bytes / 4 per float32 logit, "
                 f"in blocks of {block})", f"--max-model-len {fits}"),
             Fix("Or upgrade vLLM: later releases split a long context over blocks (paged attention v2) and dropped this check",
                 engine_flags.UPGRADE.get("vllm"))])


# the values vLLM's SchedulerConfig / CacheConfig validators quote (vllm/config.py, vllm/config/scheduler.py)
SCHEDULER_KEYS = {"batched", "util", "kv_dtype", "threshold", "swap_used"}
SWAP_LIMIT = 0.7  # CacheConfig.verify_with_parallel_config raises above 70% of the host's RAM
VLLM_DEFAULT_UTIL = 0.9  # CacheConfig.gpu_memory_utilization's default (vllm/config.py)


def _scheduler(v: dict) -> tuple[str, list[Fix]]:
    """The value the validator's own comparison needs, from the numbers it quoted."""
    if "swap_used" in v:
        bound = SWAP_LIMIT * float(v["swap_total"])
        return (f"--swap-space reserves {v['swap_used']:g} GiB of the host's {v['swap_total']:g} GiB",
                [Fix(f"Lower --swap-space (GiB per GPU worker) so all workers together stay under {bound:.1f} GiB "
                     f"({SWAP_LIMIT:.0%} of the host's RAM): at most {SWAP_LIMIT * float(v['swap_total']) / float(v['swap_used']):.0%} "
                     "of the value now; 0 turns CPU swap off (preempted requests are recomputed)", "--swap-space 0")])
    if "util" in v:
        return (f"gpu_memory_utilization {v['util']:g} is not a share of the GPU (0-1)",
                [Fix(f"Give the share of each GPU the engine may use (vLLM's default is {VLLM_DEFAULT_UTIL})",
                     f"--gpu-memory-utilization {VLLM_DEFAULT_UTIL}")])
    if "kv_dtype" in v:
        return (f"--kv-cache-dtype {v['kv_dtype']} is no KV cache dtype this vLLM knows",
                [Fix("Use auto (the model's dtype) or an fp8 variant (fp8, fp8_e4m3, fp8_e5m2)", "--kv-cache-dtype auto")])
    if "threshold" in v:
        return (f"long_prefill_token_threshold {v['threshold']} is above max_model_len {v['model_len']}",
                [Fix(f"Keep the threshold within the context length ({v['model_len']})", f"--long-prefill-token-threshold {v['model_len']}")])
    if "model_len" in v:  # without chunked prefill one step must hold a whole prompt
        return (f"max_num_batched_tokens {v['batched']} is below max_model_len {v['model_len']}",
                [Fix(f"Let one step hold a whole prompt of max_model_len ({v['model_len']}) tokens", f"--max-num-batched-tokens {v['model_len']}"),
                 Fix("Or split long prompts over steps", "--enable-chunked-prefill")])
    return (f"max_num_batched_tokens {v['batched']} is below max_num_seqs {v['seqs']}",
            [Fix(f"Give each of the {v['seqs']} sequences at least one token of the step", f"--max-num-batched-tokens {v['seqs']}"),
             Fix(f"Or run at most {v['batched']} sequences at once", f"--max-num-seqs {v['batched']}")])


def _encoder_cache(v: dict) -> tuple[str, list[Fix]]:
    """vLLM V1 sizes the encoder cache from max_num_batched_tokens (SchedulerConfig.encoder_cache_size) and the largest item
    --limit-mm-per-prompt declares (compute_mm_encoder_budget): one item's embedding tokens must fit it."""
    tokens = int(v["encoder_tokens"])
    return (f"one {v['modality']} item embeds into {tokens} tokens, above the {v['encoder_cache']}-token encoder cache",
            [Fix(f"Let one step (and so the encoder cache) hold {tokens} tokens", f"--max-num-batched-tokens {tokens}"),
             Fix(f"Or send smaller {v['modality']}s (a lower resolution, fewer frames), or declare the largest one in "
                 "--limit-mm-per-prompt (its width/height) so the cache is sized for it")])


def _mamba_blocks(v: dict) -> tuple[str, list[Fix]]:
    """vLLM (config/compilation.py) refuses full decode CUDA graphs for a hybrid model when max_num_seqs is above the
    Mamba cache blocks the KV budget gave: each decoding sequence holds one block, so at most that many run at once."""
    blocks = int(v["mamba_blocks"])
    return (f"max_num_seqs {v['seqs']} is above the {blocks} Mamba cache blocks this hybrid model got",
            [Fix(f"Run at most {blocks} sequences at once (one Mamba state block each)", f"--max-num-seqs {blocks}"),
             Fix("Or give the KV cache more of the GPU (a higher --gpu-memory-utilization) for more Mamba blocks")])


def context_finding(facts: Facts, log: LogView, found: list) -> Finding:
    """A request longer than the context (or the micro-batch) llama.cpp/Ollama was started with: the
    sizes the server quoted give the value to start it with (rounded up to whole 1024/512 steps)."""
    v = found[-1].values
    prompt, ctx, ubatch = v.get("n_prompt_tokens"), v.get("n_ctx"), v.get("n_ubatch")
    evidence = le.evidence(found) + log.earlier_runs()
    if le.template_engine(found[-1]) == "tgi" and ("max_input" in v or "room" in v or "extra" in v):
        title, fixes = _tgi_limits(v)
        return Finding("load.config_invalid", title, evidence, fixes, explains=le.CLIENT_SYMPTOMS)
    if isinstance(prompt, int) and isinstance(ubatch, int):  # llama-server: an embedding input above -ub
        size = -(-prompt // 512) * 512
        return Finding("load.config_invalid", f"an input of {prompt} tokens is longer than the micro-batch ({ubatch})", evidence,
                       [Fix(f"Embedding/rerank inputs are processed in one micro-batch: raise it to at least {prompt} tokens",
                            f"-b {size} -ub {size}")], explains=le.CLIENT_SYMPTOMS)
    if isinstance(prompt, int) and isinstance(v.get("extra"), int):  # the answer's tokens count too (TensorRT-LLM's max new tokens)
        prompt += int(v["extra"])  # type: ignore[call-overload]
    if prompt is None and isinstance(v.get("n_new_tokens"), int) and isinstance(ctx, int):
        prompt = 0  # vLLM's renderer: max_tokens alone is above max_model_len, before any prompt is counted
    sized = isinstance(prompt, int) and isinstance(ctx, int)
    new_tokens = v.get("n_new_tokens") if isinstance(v.get("n_new_tokens"), int) else 0  # LMDeploy counts the output in
    size = -(-(prompt + new_tokens + 1) // 1024) * 1024 if sized else None
    engine = le.engine(facts) or le.template_engine(found[-1])
    if engine in ("vllm", "sglang", "lmdeploy", "trtllm"):  # a prompt above the context length the engine was started with
        fix = Fix(f"Start the engine with a longer context, if the model supports it ({engine_flags.flag('ctx', engine)})",
                  engine_flags.setting("ctx", engine, size) if size else None)
    elif engine == "ollama":
        fix = Fix("Give the model a longer context (num_ctx in the request's options or the Modelfile; "
                  "OLLAMA_CONTEXT_LENGTH for the server's default)", f"OLLAMA_CONTEXT_LENGTH={size}" if size else None)
    elif engine == "ktransformers":  # KTransformers' static cache holds --cache_lens tokens (ktransformers/server/args.py)
        fix = Fix("Start the server with a longer cache (it also sizes the GPU memory the cache takes)",
                  f"--cache_lens {size}" if size else None)
    elif engine == "exllamav2":  # ExLlamaV2's cache holds max_seq_len tokens (TabbyAPI: max_seq_len and cache_size in config.yml)
        fix = Fix("Give the model a longer context: raise max_seq_len and cache_size (TabbyAPI config.yml; ExLlamaV2Config.max_seq_len "
                  "and the cache's max_seq_len), as far as the model and the GPU memory allow")
    else:
        fix = Fix("Start the server with a longer context: each of the --parallel slots gets --ctx-size / parallel"
                  + (f" (a slot holds {ctx} now; with -np N give N x {size})" if sized else ""), f"--ctx-size {size}" if size else None)
    asked = (f"a prompt of {prompt} tokens" + (f" plus {new_tokens} to generate" if new_tokens else "") if prompt or not new_tokens
             else f"a request for {new_tokens} output tokens")
    title = (f"{asked} does not fit the {ctx}-token context" if sized
             else "a request was longer than the context the server was started with")
    return Finding("load.config_invalid", title, evidence, [fix, Fix("Or shorten the prompt (history, retrieved documents) on the client")],
                   explains=le.CLIENT_SYMPTOMS)


def _tgi_limits(v: dict) -> tuple[str, list[Fix]]:
    """TGI's router refuses a request against the launcher's token limits (router/src/validation.rs): the prompt
    above --max-input-tokens (InputLength), the prompt plus max_new_tokens above --max-total-tokens (MaxTotalTokens),
    or, without a fast tokenizer, max_new_tokens above what max_total_tokens - max_input_tokens leaves (MaxNewTokens).
    The launcher also wants max_input_tokens < max_total_tokens <= max_batch_total_tokens (launcher/src/main.rs)."""
    shorter = "send shorter prompts (or set `truncate` in the request's parameters)"
    if "max_input" in v:
        prompt, limit = int(v["n_prompt_tokens"]), int(v["max_input"])
        return (f"a prompt of {prompt} tokens is above TGI's --max-input-tokens {limit}",
                [Fix(f"Raise --max-input-tokens (--max-input-length before TGI 2.0) to {prompt}, keeping --max-total-tokens above "
                     "it and --max-batch-prefill-tokens at least as large, if the model's context allows", f"--max-input-tokens {prompt}"),
                 Fix(f"Or {shorter}")])
    if "room" in v:
        room, asked = int(v["room"]), int(v["asked"])
        return (f"max_new_tokens {asked} is above the {room} tokens TGI's limits leave for generation",
                [Fix(f"Leave room for the answer: lower --max-input-tokens (--max-input-length before 2.0) by {asked - room} tokens, "
                     "or raise --max-total-tokens by as much (the router reserves all of max_input for the prompt when it "
                     "cannot count the tokens, so max_new_tokens may only fill max_total_tokens - max_input_tokens)"),
                 Fix(f"Or ask for at most {room} new tokens (max_new_tokens / max_tokens in the request)")])
    prompt, total, new = int(v["n_prompt_tokens"]), int(v["n_ctx"]), int(v["extra"])
    fixes = [Fix(f"Raise --max-total-tokens to {prompt + new} (prompt {prompt} + max_new_tokens {new}), if the model's context "
                 "and the KV cache (--max-batch-total-tokens) allow", f"--max-total-tokens {prompt + new}")]
    if total > prompt:
        fixes.append(Fix(f"Or ask for at most {total - prompt} new tokens (max_new_tokens / max_tokens in the request)"))
    fixes.append(Fix(f"Or {shorter}"))
    return f"a prompt of {prompt} tokens plus {new} new tokens is above TGI's --max-total-tokens {total}", fixes


# a value above a limit the engine states, in the engine's words: TGI's launcher names the argument
# to lower (`field`; `below` when the bound is strict); TensorRT-LLM (which names the limit, `limit`)
# and LMDeploy refuse a prompt longer than a limit fixed at build / start time, raised to the prompt's length
ENGINE_LIMITS = {"tgi": "", "trtllm": "--max_num_tokens", "lmdeploy": "--session-len"}


def _engine_limit(engine: str, v: dict) -> tuple[str, list[Fix]]:
    if engine == "tgi":
        flag = "--" + str(v.get("field") or "max_input_tokens").strip("`'\" ").replace("_", "-")
        bound = int(v["below"]) - 1 if "below" in v else int(v["derived"])
        return (f"{flag} {v.get('value')} is above the launcher's limit {bound}",
                [Fix(f"Lower {flag} to {bound}, the most the launcher accepts next to the other limits", f"{flag} {bound}")])
    flag = f"--{v['limit']}" if engine == "trtllm" and v.get("limit") else ENGINE_LIMITS[engine]
    # the prompt plus the answer it asks for (max_tokens, when the message counts it); LMDeploy: strictly shorter
    need = math.ceil(float(v["value"]) + float(v.get("extra") or 0)) + (1 if engine == "lmdeploy" else 0)
    how = "rebuild the engine (trtllm-build) or pass it to trtllm-serve" if engine == "trtllm" else "if the model supports it"
    return (f"a prompt of {v['value']:g} tokens is above the engine's limit {v.get('derived', v.get('below'))}",
            [Fix(f"Raise {flag} to {need} ({how}), or send shorter prompts", f"{flag} {need}")])


def _launch_values(facts: Facts) -> Outcome:
    from llm_doctor.engine_args import invalid_values

    bad = invalid_values(facts.deployment) if facts.deployment else []
    if not bad:
        return Outcome(detail="no argument error in the log or the launch command")
    title = f"the launch command has values the engine refuses: {'; '.join(bad)}"
    fixes = [Fix("Give each of these a valid value (or drop it to take the engine's default)")]
    return Outcome([Finding("load.config_invalid", title, [f"launch command: {b}" for b in bad], fixes,
                            explains=le.CLIENT_SYMPTOMS)])
