"""An engine's container spec pasted into an issue (docker-compose service, Kubernetes container) ->
the launch command, for doctor.engine_args.

The engines' images take the server's arguments as the container's arguments: `vllm/vllm-openai`
runs `vllm serve` (its Dockerfile ENTRYPOINT is the OpenAI API server), TGI's image runs
`text-generation-launcher`. A compose file gives them as `command:` (a string, a folded `>` block,
or a list), a Kubernetes manifest as `args:` (a block list or a `[...]` flow list, after an
optional `command:`). Read as the `docker run IMAGE ARGS...` they amount to, so the engine's own
argument parser decides what each flag means. No YAML library: only these keys are read, in the
shapes the Compose and Kubernetes docs show.
"""

from __future__ import annotations

import json
import re
import shlex

_IMAGE = re.compile(r"^(?P<indent>[ \t]*)(?:-[ \t]+)?image:[ \t]*[\"']?(?P<image>[^\s\"'#]+)", re.M)
_KEY = re.compile(r"^(?P<indent>[ \t]*)(?:-[ \t]+)?(?P<key>command|args|entrypoint):[ \t]*(?P<value>.*?)[ \t]*$")
_ITEM = re.compile(r"^(?P<indent>[ \t]*)-[ \t]+(?P<value>.*?)[ \t]*$")
_QUOTED = re.compile(r"\"((?:[^\"\\]|\\.)*)\"|'([^']*)'|([^,\s][^,]*)")
ENGINE_IMAGES = ("vllm-openai", "vllm/vllm", "text-generation-inference")  # doctor.engine_args.IMAGE_ENGINES
SCAN_LINES = 80  # a container's keys are within this many lines of its image
# a deployment recipe's list of the engine's arguments under a key that names the engine (`vllm_args:`,
# `sglang_extra_args:`, `vllmArgs:`): the arguments of `vllm serve` / SGLang's launch_server, no image needed
_ENGINE_KEY = re.compile(r"^(?P<indent>[ \t]*)(?:-[ \t]+)?(?P<key>(?P<engine>vllm|sglang)[_-]?(?:(?:serve|server|extra|engine)[_-]?)?args):"
                         r"[ \t]*(?P<value>.*?)[ \t]*$", re.I | re.M)
ENGINE_COMMANDS = {"vllm": ["vllm", "serve"], "sglang": ["python3", "-m", "sglang.launch_server"]}


def commands(text: str) -> list[list[str]]:
    """`docker run IMAGE ARGS...` argv of each engine container in the text, in order."""
    if "image:" not in text:
        return []
    lines = text.split("\n")
    starts = {text.count("\n", 0, m.start()): m for m in _IMAGE.finditer(text) if any(i in m.group("image") for i in ENGINE_IMAGES)}
    out = []
    for no, m in starts.items():
        argv: list[str] = []
        for at in range(max(0, no - SCAN_LINES), min(len(lines), no + SCAN_LINES)):
            key = _KEY.match(lines[at])
            if key is None or key.group("key") == "entrypoint" or not _same_container(lines, no, at):
                continue
            argv += _value(lines, at, key)
        if argv:
            out.append(["docker", "run", *_granted(lines, no), m.group("image"), *_unwrap(argv)])
    return out


# the GPUs a container is given and the GPU list it is told: Kubernetes `nvidia.com/gpu: 4` (resources limits or
# requests), Compose `count: 2` under deploy.resources.reservations.devices; the env as Kubernetes writes it
# (`- name: CUDA_VISIBLE_DEVICES` then `value: "0,1"`) or Compose does (`- CUDA_VISIBLE_DEVICES=0,1`, `CUDA_VISIBLE_DEVICES: "0,1"`)
_GPU_LIMIT = re.compile(r"^[ \t]*(?:nvidia\.com/gpu|count):[ \t]*[\"']?(\d+)[\"']?[ \t]*(?:#.*)?$")
_CVD = re.compile(r"^[ \t]*(?:-[ \t]+)?(?:name:[ \t]*[\"']?CUDA_VISIBLE_DEVICES[\"']?[ \t]*$|"
                  r"[\"']?CUDA_VISIBLE_DEVICES[\"']?[ \t]*[=:][ \t]*[\"']?(?P<inline>[\d,]+))")
_ENV_VALUE = re.compile(r"^[ \t]*value:[ \t]*[\"']?(?P<value>[\d,]+)[\"']?")


def _granted(lines: list[str], image_at: int) -> list[str]:
    """`docker run` options for the container's GPU limit and CUDA_VISIBLE_DEVICES, as its spec gives them."""
    out: list[str] = []
    for at in range(max(0, image_at - SCAN_LINES), min(len(lines), image_at + SCAN_LINES)):
        if not _same_container(lines, image_at, at):
            continue
        limit = _GPU_LIMIT.match(lines[at])
        if limit is not None and "count:" in lines[at] and not re.search(r"gpu|nvidia", " ".join(lines[max(0, at - 3):at + 4]), re.I):
            limit = None  # a Compose device count is the GPUs' where its driver or capabilities say so
        if limit is not None and "--gpus" not in out:
            out += ["--gpus", limit.group(1)]
        elif (cvd := _CVD.match(lines[at])) is not None:
            value = cvd.group("inline") or ((v := _ENV_VALUE.match(lines[at + 1])) and v.group("value") if at + 1 < len(lines) else None)
            if value and "-e" not in out:
                out += ["-e", f"CUDA_VISIBLE_DEVICES={value}"]
    return out


def engine_arg_lists(text: str) -> list[list[str]]:
    """The engine command each `<engine>_args:` list of the text amounts to, in order. A list that
    starts with the model (`vllm serve`'s positional argument) keeps it there."""
    found = list(_ENGINE_KEY.finditer(text))
    if not found:  # no lower-cased copy and no split of a whole log head (vLLM's "non-default args:" is no such key)
        return []
    lines = text.split("\n")
    out = []
    for m in found:
        at = text.count("\n", 0, m.start())
        argv = _unwrap(_value(lines, at, m))
        if any(a.startswith("--") for a in argv):
            out.append([*ENGINE_COMMANDS[m.group("engine").lower()], *argv])
    return out


def _same_container(lines: list[str], image_at: int, key_at: int) -> bool:
    """No other `image:` and no line less indented than both between the image and the key (the keys
    of one container sit at one indentation, in any order)."""
    lo, hi = sorted((image_at, key_at))
    indent = min(_indent(lines[image_at]), _indent(lines[key_at]))
    for line in lines[lo + 1 : hi]:
        if _IMAGE.match(line) or (line.strip() and not line.lstrip().startswith("#") and _indent(line) < indent):
            return False
    return True


def _value(lines: list[str], at: int, key: re.Match[str]) -> list[str]:
    """The key's value as a list of words: a flow list, a block list, a folded/literal block or a string."""
    value = _uncomment(key.group("value"))
    indent = len(key.group("indent"))
    if value.startswith("["):
        flow = value
        i = at + 1
        while flow.count("[") > flow.count("]") and i < len(lines):
            flow += " " + _uncomment(lines[i].strip())
            i += 1
        return _flow_list(flow)
    if value in ("", ">", "|", ">-", "|-", ">+", "|+"):
        body = []
        for line in lines[at + 1 :]:
            if not line.strip():
                continue
            if _indent(line) <= indent and not (value == "" and _ITEM.match(line) and _indent(line) == indent):
                break
            item = _ITEM.match(line) if value == "" else None
            body.append(_unquote(_uncomment(item.group("value"))) if item else _uncomment(line.strip()))
        return body if value == "" else _split(" ".join(body))
    return _split(_unquote(value))


def _unwrap(argv: list[str]) -> list[str]:
    """`["/bin/sh", "-c", "vllm serve M --flag"]`: the shell's command string is the command."""
    if len(argv) >= 3 and argv[0].endswith("sh") and argv[1] == "-c":
        return _split(argv[2]) + argv[3:]
    if len(argv) == 1 and " " in argv[0]:
        return _split(argv[0])
    return argv


def _flow_list(flow: str) -> list[str]:
    inner = flow.strip()[1:].rsplit("]", 1)[0]
    try:
        items = json.loads("[" + inner + "]")
        return [str(x) for x in items]
    except ValueError:
        return [next(g for g in m.groups() if g is not None).strip() for m in _QUOTED.finditer(inner)]


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote in a cut paste
        return text.split()


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" else value


def _uncomment(value: str) -> str:
    """`"2"   # two GPUs` -> `"2"` (a YAML comment starts at ` #` outside quotes)."""
    m = re.match(r"^((?:\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^#\"'])*?)(?:\s+#.*)?$", value)
    return (m.group(1) if m else value).strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
