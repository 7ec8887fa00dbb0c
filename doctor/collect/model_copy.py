"""Where a model's files are on this machine, with a fingerprint (file count, bytes, config.json hash),
so that the nodes of a cluster can be compared: vLLM workers on every node load the weights from
their own disk, and a node without the model (or with another revision of it) fails the start-up or,
worse, serves another model.

A local path is read as given; a Hugging Face ID is looked up in the node's hub cache (HF_HUB_CACHE,
else HF_HOME/hub, else ~/.cache/huggingface/hub), in the snapshot `refs/main` names (else the newest
holding a config.json). Bounded: a folder of more than MAX_FILES files is reported as such, never
walked for minutes.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from llm_doctor.facts.cluster import ModelCopy, is_local
from llm_doctor.models import hf_cache_root, hf_cache_snapshot

MAX_FILES = 20_000
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")


def where(ref: str) -> Path | None:
    """The folder holding `ref`'s files here, or None when `ref` is neither a path nor a hub ID. A hub ID
    resolves as the engine's own config lookup does (doctor.models.hf_cache_snapshot); when this node
    has no such snapshot, the snapshots folder that should hold it, so the report names where it looked."""
    if is_local(ref):
        return Path(ref).expanduser()
    if not HUB_ID.fullmatch(ref):
        return None
    return hf_cache_snapshot(ref) or hf_cache_root() / ("models--" + ref.replace("/", "--")) / "snapshots"


def fingerprint(ref: str) -> ModelCopy:
    folder = where(ref)
    copy = ModelCopy(ref=ref, path=str(folder or ""))
    if folder is None or not folder.is_dir():
        return copy
    copy.present = True
    try:
        for root, _dirs, names in os.walk(folder, followlinks=True):  # hub snapshots are symlinks into blobs/
            for name in names:
                copy.files += 1
                if copy.files > MAX_FILES:
                    copy.error = f"more than {MAX_FILES} files under {folder}: not fingerprinted"
                    return copy
                copy.bytes += (Path(root) / name).stat().st_size
                copy.weight_files += name.endswith(WEIGHT_SUFFIXES)
        config = folder / "config.json"
        if config.is_file():
            copy.config_sha256 = hashlib.sha256(config.read_bytes()).hexdigest()[:16]
    except OSError as exc:
        copy.error = f"{exc.strerror or exc}: {exc.filename or folder}"
    return copy
