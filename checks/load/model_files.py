"""Can the engine read the model? Three causes with different fixes: the files (missing, wrong path,
gated/unauthorised on the Hub, Hub unreachable, wrong format), custom code that needs
--trust-remote-code, and an architecture this engine/transformers release does not know yet."""

from __future__ import annotations

import re

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.logs import LogEvent
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logparse.catalogue import DATA_DIR, rows
from llm_doctor.logparse.failures import KINDS as GENERIC_KINDS
from llm_doctor.logview import LogView

ARCH_IS_FILE = {"clip"}  # a GGUF of a projector/encoder, not a language model: the wrong file
# GGUF architectures of image/video generation models (city96/ComfyUI-GGUF loader.py IMG_ARCH_LIST): no
# language-model engine runs them, whatever its version
IMAGE_ARCHS = {"flux", "sd1", "sdxl", "sd3", "aura", "hidream", "cosmos", "ltxv", "hyvid", "wan", "lumina2", "qwen_image"}
# the architectures the newest source of an engine implements (doctor/data/architectures.jsonl): a model outside it is
# not a build too old for it (load.engine_outdated) but a model this engine does not run at all (load.model_files)
ARCHS_PATH = DATA_DIR.parent / "architectures.jsonl"
_ARCH_ROWS = [e for _, e in rows(ARCHS_PATH, ("engine", "archs", "source"), ("note", "build_after", "build_note"))]
KNOWN_ARCHS = {e["engine"]: (frozenset(e["archs"]), e["source"]) for e in _ARCH_ROWS}
# the build number each list is known to be newer than: a log's build above it may know architectures the list lacks
SNAPSHOT_AFTER = {e["engine"]: int(e["build_after"]) for e in _ARCH_ROWS if "build_after" in e}
# llama.cpp's build as its tools print it ("build: 6019 (8ad7b3e6)", "main: build = 1233 (...)", "build_info: b4600-...")
BUILD = re.compile(r"^b?(?P<n>\d{3,6})\b")
# how each engine is brought to a release that reads a newer model (GGUF engines: the runtime, not pip)
UPGRADES = {
    "vllm": [Fix("Upgrade the engine (and transformers) to a release that supports this architecture", "pip install -U vllm transformers"),
             Fix("Or use the engine's latest container image / a build from main")],
    # SGLang registers architectures per release (models/registry.py), its image ships them with a matching transformers
    "sglang": [Fix("Upgrade SGLang (and transformers) to a release that supports this architecture", "pip install -U sglang transformers"),
               Fix("Or use SGLang's latest container image", "docker pull lmsysorg/sglang:latest")],
    "ollama": [Fix("Upgrade Ollama (the macOS/Windows app updates itself; on Linux rerun the installer), then pull the model again",
                   "curl -fsSL https://ollama.com/install.sh | sh"),
               Fix("Or re-pull the model: a tag updated for the current Ollama may have been re-converted")],
    "llamacpp": [Fix("Update llama.cpp to a build that knows this model (new architectures and tensors land on master first)",
                     "docker pull ghcr.io/ggml-org/llama.cpp:server"),
                 Fix("Or rebuild from source: git pull && cmake --build build --config Release (llama-cpp-python: pip install -U llama-cpp-python)")],
    # LMDeploy's PyTorch engine and TensorRT-LLM's PyTorch backend register architectures per release; TGI ships as an image
    "lmdeploy": [Fix("Upgrade LMDeploy (and transformers) to a release whose PyTorch engine supports this architecture",
                     "pip install -U lmdeploy transformers")],
    "trtllm": [Fix("Upgrade TensorRT-LLM to a release whose PyTorch backend registers this architecture", "pip install -U tensorrt_llm")],
    "tgi": [Fix("Pull a newer TGI image: architectures arrive with its releases",
                "docker pull ghcr.io/huggingface/text-generation-inference:latest")],
    # mlx-lm defines one model class per model_type and loads weights strictly (mlx nn.Module.load_weights): a variant newer
    # than the release is refused (ml-explore/mlx#1024: "you are using an outdated MLX LM")
    "mlx": [Fix("Upgrade mlx-lm and mlx (mlx-vlm for a vision model, whichever loaded it): model classes arrive with their releases",
                "pip install -U mlx-lm mlx")],
}
# the engine a template's source names when the log names none of the engines above ("other" servers)
SOURCE_ENGINES = {"ml-explore/mlx": "mlx", "ml-explore/mlx-lm": "mlx"}


# transformers' auto-class registry (models/auto/configuration_auto.py, auto_factory.py) refusing a name the engine registers
# for itself: the installed transformers is newer than the engine release that added the model on its own
REGISTERED_TWICE = "is already used by a Transformers"

# A serving engine that fails a TLS handshake or its proxy before it served (no request answered yet) was downloading its
# model: at start-up it calls out to nothing but the Hub (lmdeploy/vLLM/SGLang/TGI resolve a repo id with huggingface_hub,
# through HTTPS_PROXY). The client's words (urllib3 "ProxyError: ('Unable to connect to proxy', SSLError(...))") name no host.
HUB_CALLS = ("client_tls", "client_proxy")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def _source_engine(e: LogEvent) -> str:
    """The engine of the repository the event's template comes from (SOURCE_ENGINES), or ""."""
    source = str(e.values.get("template_source") or "")
    return SOURCE_ENGINES.get(source.split("@")[0], "")


def _hub_download(facts: Facts, log: LogView, model: str) -> list[LogEvent]:
    """The client errors of an engine's own Hub download, when the engine was started with a repo id and never served."""
    if le.engine(facts) not in le.LOAD_ENGINES or not HUB_ID.fullmatch(model):
        return []
    return [e for e in log.events(*HUB_CALLS) if e.fatal and not e.values.get("then_served")]


@check("load.model_files", "load", codes=["load.model_files", "load.remote_code", "load.engine_outdated"], events=["remote_code", "arch_unsupported", "weight_key_unknown", "hf_access", "model_missing", "hub_unreachable", "load_failed", *HUB_CALLS])
def model_files(facts: Facts, log: LogView) -> Outcome:
    """The model's files, code and architecture can be loaded by this engine."""
    findings: list[Finding] = []
    remote = log.events("remote_code")
    arch = log.events("arch_unsupported", "weight_key_unknown")
    access = log.events("hf_access")
    model = le.deployment_value(facts, "model") or ""
    missing = log.events("model_missing", "hub_unreachable") + _hub_download(facts, log, model)
    if access:
        findings.append(Finding("load.model_files", "the model repository refused access (gated or needs a token)",
                                le.evidence(access) + log.earlier_runs(),
                                [Fix(f"Accept the licence on {f'https://huggingface.co/{model}' if model else 'the model’s Hugging Face page'} and log in "
                                     "with a token from https://huggingface.co/settings/tokens (or set HF_TOKEN in the engine's environment)",
                                     "huggingface-cli login"),
                                 Fix("Or download it once and serve the local folder",
                                     f"huggingface-cli download {model} --local-dir ./model" if model else None)],
                                explains=le.CLIENT_SYMPTOMS))
    if arch:
        e = next((x for x in arch if x.fatal), arch[0])
        name = e.values.get("arch") or e.values.get("model_type") or e.values.get("gguf_arch") or ""
        if "config_class" in e.values:
            name = f"{e.values['config_class']} (its config has no field {e.values.get('attribute')})"
        if "tensor" in e.values:
            name = f"(the file's tensor {e.values['tensor']} is not laid out as this build expects)"
        if e.kind == "weight_key_unknown":
            param = e.values.get("param")
            name = f"(the checkpoint has weights it does not know{f': {param}' if param else ''})"
        if name in ARCH_IS_FILE:
            findings.append(Finding("load.model_files", f"the file given is a '{name}' model, not a language model",
                                    le.evidence(arch + missing[:1]),
                                    [Fix("Pass the language model GGUF with -m and the projector with --mmproj")],
                                    explains=le.CLIENT_SYMPTOMS))
        elif name in IMAGE_ARCHS:
            findings.append(Finding("load.model_files", f"the file given is an image-generation model ('{name}'), not a language model",
                                    le.evidence(arch + missing[:1]),
                                    [Fix("Load a language-model GGUF here; this one is for an image tool (ComfyUI-GGUF, stable-diffusion.cpp)")],
                                    explains=le.CLIENT_SYMPTOMS))
        elif _never_implemented(facts, e, name):
            known, source = KNOWN_ARCHS["llamacpp"]
            findings.append(Finding("load.model_files", f"no llama.cpp build implements the architecture '{name}'",
                                    le.evidence(arch) + [f"'{name}' is not among the {len(known)} architectures of llama.cpp master "
                                                         f"({source.split(':')[0]})"] + log.earlier_runs(),
                                    [Fix(f"This GGUF ('{name}') is for another runtime: run it there (Ollama's own engine, vLLM or "
                                         "transformers from the original checkpoint), or pick a GGUF of a model llama.cpp supports"),
                                     Fix("List what this file declares", "python -m gguf.scripts.gguf_dump --no-tensors MODEL.gguf")],
                                    explains=le.CLIENT_SYMPTOMS))
        else:
            version = facts.logs.engine_version if facts.logs else ""
            fatal = [x for x in arch if x.fatal]
            # only a warning that the engine took another path for it (LMDeploy's TurboMind -> PyTorch fallback): the model
            # runs slower; it is the first cause only when that path then failed with nothing known to say why
            others = log.other_failures()
            first_cause = bool(fatal) or bool(others) and others <= set(GENERIC_KINDS)
            fixes = UPGRADES.get(le.engine(facts) or le.template_engine(e)) or UPGRADES.get(_source_engine(e), UPGRADES["vllm"])
            title = f"this engine build does not know the architecture {name or ''}".rstrip()
            if any(REGISTERED_TWICE in line for x in arch for line in x.lines):
                fixes = [*fixes[:1], Fix("Or put back the transformers release this engine version pins: a newer transformers now "
                                         "ships the model type the engine registers itself", "pip check")]
                title = "the installed transformers is newer than this engine release: both register the same model type"
            findings.append(Finding("load.engine_outdated", title,
                                    le.evidence(fatal or arch) + ([f"engine version {version}"] if version else []) + log.earlier_runs(),
                                    fixes,
                                    severity="" if first_cause else "warn",
                                    explains=["load.model_files", *(["load.unrecognized_failure"] if first_cause and not fatal else []),
                                              *le.CLIENT_SYMPTOMS]))
    if remote and not findings:
        findings.append(Finding("load.remote_code", "the model ships custom code and needs --trust-remote-code",
                                le.evidence(remote) + log.earlier_runs(),
                                [Fix("Allow the repository's own Python code (read it first)", "--trust-remote-code")],
                                explains=["load.model_files", "load.config_invalid", *le.CLIENT_SYMPTOMS]))
    if missing and not findings:
        path = le.first_value(missing, "path")
        hub = any(e.kind in ("hub_unreachable", *HUB_CALLS) for e in missing)
        fixes = []
        if hub and le.engine(facts) == "ollama":  # `ollama pull` is done by the server process, with the server's network
            fixes.append(Fix("The Ollama server (not the CLI) downloads the model: give the server's environment the proxy "
                             "(HTTPS_PROXY in its systemd unit or `docker run -e`) and a DNS that resolves registry.ollama.ai"))
            fixes.append(Fix("Or pull on a machine with access and copy its models folder (~/.ollama/models) to this one"))
        elif hub and any("hf_transfer" in line for e in missing for line in e.lines):
            # huggingface_hub file_download.py http_get: the Rust downloader the environment turned on failed, or is not installed
            fixes.append(Fix("Download with huggingface_hub's own downloader: hf_transfer hides the cause (a proxy it does not read, "
                             "a full disk, a refused range) or is not installed", "HF_HUB_ENABLE_HF_TRANSFER=0"))
            fixes.append(Fix("Or install the downloader the environment asks for", "pip install hf_transfer"))
        elif hub:
            fixes.append(Fix("The Hub cannot be reached from here: download the model elsewhere and pass the local folder",
                              f"huggingface-cli download {model} --local-dir /models/{model.rstrip('/').split('/')[-1]}" if model else None))
            fixes.append(Fix("Or give the engine's environment a Hub mirror (HF_ENDPOINT set to its URL) or a proxy (HTTPS_PROXY)"))
        elif le.first_value(missing, "native_param"):
            fixes.append(Fix(f"The folder holds Meta/Mistral-native weights ({le.first_value(missing, 'native_param')}) that the "
                             "Hugging Face loader cannot map: for a Mistral repository read them in their own format",
                             "--load-format mistral --config-format mistral --tokenizer-mode mistral"))
            fixes.append(Fix("Or keep only one format in the folder (the HF model-*.safetensors, without consolidated.*)"))
        elif le.engine(facts) in ("llamacpp", "ollama"):
            fixes.append(Fix(f"Check that -m names a complete GGUF{f' ({path})' if path else ''}: compare its size and sha256 with the "
                             "download page, and for a split model pass the first piece (-00001-of-N.gguf) with every piece beside it"))
            fixes.append(Fix("Re-download it (ollama: pull the model again) or re-convert it with the current convert_hf_to_gguf.py",
                             "ollama pull " + model if le.engine(facts) == "ollama" and model else None))
        else:
            fixes.append(Fix(f"Check the model path exists inside the container/host{f' ({path})' if path else ''} and holds config.json "
                             "and the weights; a path that does not exist is treated as a Hub repo id"))
            fixes.append(Fix("Re-download or re-convert the files if they are from an older format"))
        network = ["access.tls_failed", "access.dns_failed", "access.proxy_failed"] if hub else []
        title = "the engine could not download the model from the Hub" if hub else "the model files could not be found or read"
        findings.append(Finding("load.model_files", title, le.evidence(missing) + log.earlier_runs(),
                                fixes, explains=network + le.CLIENT_SYMPTOMS))
    return Outcome(findings, "" if findings else "no model-file error in the log")


def _never_implemented(facts: Facts, e, name: str) -> bool:
    """llama.cpp's "unknown model architecture" for a name its newest source does not list either: updating
    will not help, unless the log's build is newer than that list (then the list proves nothing: an engine that
    says it does not know the architecture is too old for it). Ollama prints the same words from its vendored llama.cpp, but runs more architectures with
    its own engine, so there a newer Ollama may."""
    if "gguf_arch" not in e.values and "arch" not in e.values or not name:
        return False
    engine = le.engine(facts) or le.template_engine(e)
    if engine != "llamacpp" or "unknown model architecture" not in " ".join(e.lines) or name in KNOWN_ARCHS["llamacpp"][0]:
        return False
    # a build newer than the snapshot may be one that knows more than the list: absence from the list is no evidence then
    build = BUILD.match(facts.logs.engine_version if facts.logs else "")
    return not (build and int(build.group("n")) > SNAPSHOT_AFTER.get("llamacpp", 10**9))
