"""Python code that starts an engine, pasted into an issue -> EngineConfig.

Offline inference is started from Python, not a command line: vLLM's `LLM(model, **kwargs)` (and
`EngineArgs(...)` / `AsyncEngineArgs(...)` for the async engine), SGLang's `sgl.Engine(model_path=...,
**ServerArgs)` (`sgl.Runtime(...)` before it). Their keyword arguments are the engine arguments
under their Python names (vllm/entrypoints/llm.py `LLM.__init__` passes **kwargs to EngineArgs;
sglang/srt/entrypoints/engine.py `Engine.__init__` builds `ServerArgs(**kwargs)`), so a call is read
with doctor.engine_args the way the engines' own argument dumps are. Only literal values count: a
variable (`tensor_parallel_size=args.tp`) says nothing about what ran.
"""

from __future__ import annotations

import ast
import re

from llm_doctor.facts.deployment import EngineConfig

# the call, its engine, and the Python name of a positional first argument
_CALL = re.compile(r"(?<![\w.])(?:(?:vllm\.)?(?P<vllm>LLM|AsyncEngineArgs|EngineArgs)|(?:sgl|sglang)\.(?P<sglang>Engine|Runtime))\(")
_POSITIONAL = {"vllm": "model", "sglang": "model_path"}
_DUMP = {"vllm": "args: Namespace({})", "sglang": "server_args=ServerArgs({})"}
MAX_CALL = 20_000


def calls(text: str) -> list[tuple[str, dict[str, object]]]:
    """(engine, literal keyword arguments) of each engine call in the text, in order."""
    if "(" not in text or not ("LLM(" in text or "EngineArgs(" in text or ".Engine(" in text or ".Runtime(" in text):
        return []
    out = []
    for m in _CALL.finditer(text):
        engine = "vllm" if m.group("vllm") else "sglang"
        node = _parse_call(text, m.start(), m.end())
        if node is None:
            continue
        kwargs = {k.arg: v for k in node.keywords if k.arg and (v := _literal(k.value)) is not None}
        if node.args and isinstance(first := _literal(node.args[0]), str):
            kwargs.setdefault(_POSITIONAL[engine], first)
        if kwargs.get(_POSITIONAL[engine]) or len(kwargs) >= 2:  # a call that configures an engine, not a mention
            out.append((engine, kwargs))
    return out


def config(text: str) -> EngineConfig | None:
    """The last engine call in the text as the engine's config; what it sets is marked "code"
    (chosen by whoever wrote the call), the rest are the engine's defaults. None when there is none."""
    from llm_doctor import engine_args

    found = calls(text)
    if not found:
        return None
    engine, kwargs = found[-1]
    body = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    cfg = engine_args.parse_log_args(_DUMP[engine].format(body))
    if cfg.engine != engine:
        return None
    cfg.sources = {k: ("code" if v == "log" else v) for k, v in cfg.sources.items()}
    return cfg


def _parse_call(text: str, start: int, open_end: int) -> ast.Call | None:
    """The call from its name to the matching parenthesis, as Python; None when it does not parse
    (cut by the paste, or not code)."""
    depth = 0
    for i in range(open_end - 1, min(len(text), open_end + MAX_CALL)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            try:
                node = ast.parse(text[start : i + 1], mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
            return node if isinstance(node, ast.Call) else None
    return None


def _literal(node: ast.expr) -> object:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    return value if isinstance(value, (str, int, float, bool)) else None
