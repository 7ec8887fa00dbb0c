"""Host facts (psutil): the engine processes with their parsed arguments, RAM, swap, /dev/shm,
CPUs and load, cgroup limits in a container; and the `analyze` reader for a saved launch command.

An engine's own command line is the best evidence of how it was configured (`ps` shows what was
really passed, not what the deployment file meant to pass), so each running engine is parsed
with doctor.engine_args into an EngineConfig with the engine's defaults.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from llm_doctor.engine import Deadline
from llm_doctor.facts import Facts
from llm_doctor.facts.host import EngineProcess, HostFacts

MIB = 1024 * 1024
ENGINE_HINTS = (
    "vllm",
    "sglang",
    "text-generation-launcher",
    "text-generation-server",
    "ollama",
    "llama-server",
    "trtllm-serve",
)
ENV_PREFIXES = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NCCL_", "VLLM_", "SGLANG_", "OMP_NUM_THREADS", "CUDA_")
SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSW", re.I)


def collect(sample_s: float = 1.0) -> HostFacts:
    import psutil

    host = HostFacts(cpu_count=psutil.cpu_count(), cpu_physical=psutil.cpu_count(logical=False))
    try:
        host.load_avg_1m = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    host.cpu_percent = psutil.cpu_percent(interval=max(0.1, min(sample_s, 1.0)))
    vm, sw = psutil.virtual_memory(), psutil.swap_memory()
    host.mem_total_mib, host.mem_available_mib = round(vm.total / MIB), round(vm.available / MIB)
    host.swap_total_mib, host.swap_used_mib = round(sw.total / MIB), round(sw.used / MIB)
    if Path("/dev/shm").exists():
        try:
            shm = psutil.disk_usage("/dev/shm")
            host.shm_total_mib, host.shm_used_mib = round(shm.total / MIB), round(shm.used / MIB)
        except OSError:
            pass
    host.in_container = _in_container()
    host.cgroup_memory_limit_mib, host.cgroup_cpu_limit = _cgroup_limits(host.mem_total_mib)
    host.processes = engine_processes()
    return host


def _in_container() -> bool:
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists():
        return True
    try:
        text = Path("/proc/1/cgroup").read_text(errors="replace")
    except OSError:
        return False
    return bool(re.search(r"docker|kubepods|containerd|libpod", text))


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _cgroup_limits(mem_total_mib: float | None) -> tuple[float | None, float | None]:
    """cgroup v2 (memory.max, cpu.max) or v1 (memory.limit_in_bytes, cpu.cfs_quota_us); a limit
    at or above the host's RAM is no limit."""
    mem = _read("/sys/fs/cgroup/memory.max") or _read("/sys/fs/cgroup/memory/memory.limit_in_bytes")
    mem_mib = None
    if mem and mem.isdigit():
        mem_mib = round(int(mem) / MIB)
        if mem_total_mib and mem_mib >= mem_total_mib:
            mem_mib = None
    cpu = None
    if (cpu_max := _read("/sys/fs/cgroup/cpu.max")) and not cpu_max.startswith("max"):
        quota, _, period = cpu_max.partition(" ")
        if quota.isdigit() and period.isdigit() and int(period):
            cpu = round(int(quota) / int(period), 2)
    elif (quota := _read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")) and quota.lstrip("-").isdigit() and int(quota) > 0:
        period = _read("/sys/fs/cgroup/cpu/cpu.cfs_period_us") or "100000"
        cpu = round(int(quota) / int(period), 2) if period.isdigit() and int(period) else None
    return mem_mib, cpu


def engine_processes() -> list[EngineProcess]:
    """Running inference engines, parents only (a vLLM TP worker is a child of the server)."""
    import psutil

    from llm_doctor.engine_args import parse_command
    from llm_doctor.redact import Redactor

    redact = Redactor()  # an engine's own --api-key / --hf_token never leaves its command line
    found: list[EngineProcess] = []
    for proc in psutil.process_iter(["pid", "ppid", "cmdline"]):
        argv = proc.info.get("cmdline") or []
        joined = " ".join(argv)
        if not argv or not any(h in joined for h in ENGINE_HINTS) or not is_engine_argv(argv):
            continue
        cfg = parse_command(argv, source="process")
        if not cfg.engine:
            continue
        cfg.extra = redact.obj(cfg.extra)  # an engine flag this parser does not know may hold a secret
        ep = EngineProcess(pid=proc.info["pid"], engine=cfg.engine, cmdline=redact.text(joined), config=cfg)
        try:
            with proc.oneshot():
                ep.rss_mib = round(proc.memory_info().rss / MIB)
                ep.num_threads = proc.num_threads()
                ep.children = [c.pid for c in proc.children(recursive=True)]
        except (psutil.Error, OSError):
            pass
        ep.env = _env(proc)
        if ep.config is not None:
            for key, value in ep.env.items():
                ep.config.env.setdefault(key, value)
        found.append(ep)
    child_pids = {c for ep in found for c in ep.children}
    return [ep for ep in found if ep.pid not in child_pids]


ENGINE_EXECUTABLES = {"vllm", "sglang", "llama-server", "text-generation-launcher", "text-generation-server", "trtllm-serve", "ollama"}
ENGINE_MODULES = ("vllm.entrypoints", "sglang.launch_server", "sglang.srt", "text_generation_server", "tensorrt_llm")


def is_engine_argv(argv: list[str]) -> bool:
    """The process IS an engine (its executable, or `python [-m] <engine>`), not a tool that names
    one in its arguments (`cmake --target llama-server`, `grep vllm`, `pip install vllm`)."""
    exe = os.path.basename(argv[0])
    if exe in ENGINE_EXECUTABLES:
        return True
    if exe.startswith("python") or exe in ("uv", "uvx", "env"):
        rest = [a for a in argv[1:4] if a not in ("-m", "-u", "-O", "run")]
        return bool(rest) and (os.path.basename(rest[0]) in ENGINE_EXECUTABLES or rest[0].startswith(ENGINE_MODULES))
    return False


def _env(proc: object) -> dict[str, str]:
    """The engine-relevant environment, where readable (another user's process is not)."""
    import psutil

    try:
        env = proc.environ()  # type: ignore[attr-defined]
    except (psutil.Error, OSError):
        return {}
    return {
        k: ("<set>" if SECRET_ENV.search(k) else v)
        for k, v in env.items()
        if k.startswith(ENV_PREFIXES)
    }


# -------------------------------------------------------------------------------------------
# `analyze` reader: a text file holding an engine's launch command line

_LAUNCH = re.compile(
    r"(\bvllm\s+serve\b|vllm\.entrypoints\.(openai\.)?api_server|sglang\.launch_server|\bsglang\s+serve\b"
    r"|text-generation-launcher|llama-server\b|trtllm-serve|\bollama\s+serve\b|vllm/vllm-openai)"
)
_LOG_LINE = re.compile(
    r"^\s*(\(?[A-Za-z_]+ pid=\d+\)|\[?\d{4}-\d{2}-\d{2}[ T]\d|(INFO|WARNING|ERROR|DEBUG|WARN)\b[: ]|\d{2}-\d{2} \d{2}:\d{2}|\[\s*\d+\.\d+\]|time=)"
)
_EXPORT = re.compile(r"^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(\S*)\s*$")
_PROMPT = re.compile(r"^\s*(\S+@\S+[:~][^$#]*[$#]|[$#>])\s+")


def command_lines(text: str) -> list[str]:
    """Logical lines of a shell snippet: prompts stripped, comments dropped, backslash
    continuations joined."""
    out, cur = [], ""
    for raw in text.replace("\r", "").split("\n"):
        line = _PROMPT.sub("", raw).rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            if cur:
                out.append(cur)
                cur = ""
            continue
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        out.append(cur)
        cur = ""
    if cur:
        out.append(cur)
    return out


def looks_like_command(head: str) -> bool:
    """A short text whose lines are a launch command (not a log that quotes one)."""
    lines = command_lines(head)
    if not lines or len(lines) > 12 or len(head) > 32 * 1024:
        return False
    if any(_LOG_LINE.match(ln) for ln in head.splitlines()):
        return False
    return any(_LAUNCH.search(ln) for ln in lines)


def load_command(path: str, facts: Facts, deadline: Deadline) -> None:
    from llm_doctor.engine_args import parse_command

    text = Path(path).read_bytes()[: 64 * 1024].decode("utf-8", errors="replace")
    line = next((ln for ln in command_lines(text) if _LAUNCH.search(ln)), None)
    if line is None:
        facts.notes.append(f"{path}: no engine launch command found")
        return
    cfg = parse_command(line, source="cmdline")
    for ln in command_lines(text):  # `export CUDA_VISIBLE_DEVICES=0,1` lines of a launch script
        if m := _EXPORT.match(ln):
            cfg.env.setdefault(m.group(1), m.group(2).strip("'\""))
    cfg.env = {k: ("<set>" if SECRET_ENV.search(k) else v) for k, v in cfg.env.items()}  # VLLM_API_KEY=... never kept
    if not cfg.engine:
        facts.notes.append(f"{path}: the command line names no known engine")
        return
    facts.deployment = cfg.merge(facts.deployment) if facts.deployment else cfg
    if facts.model is None and cfg.model:
        from llm_doctor import models

        facts.model = models.known(cfg.model)  # the Hugging Face cache, else the shipped table; None when unknown
