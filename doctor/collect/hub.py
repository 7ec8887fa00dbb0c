"""Fetch a model's config.json and safetensors index from the Hugging Face hub (I/O, so here).

Honours HF_ENDPOINT (mirrors, air-gapped proxies) and HF_TOKEN (gated repos; sent only to that
endpoint, never logged), and caches answers on disk so a second `plan` is offline. Failures come
back as a reason string for a finding, never as an exception.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

DEFAULT_ENDPOINT = "https://huggingface.co"


def cache_dir() -> Path:
    base = os.environ.get("LLM_DOCTOR_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "llm-doctor"
    )
    return Path(base) / "hub"


def fetch_model_files(
    repo_id: str, timeout: float = 10.0, revision: str = "main"
) -> tuple[dict[str, Any] | None, int | None, str]:
    """(config, safetensors total_size, reason): config None with a reason when unreachable."""
    safe = repo_id.replace("/", "--")
    cached = cache_dir() / f"{safe}@{revision}.json"
    if cached.is_file():
        try:
            data = json.loads(cached.read_text())
            return data["config"], data.get("total_size"), ""
        except (ValueError, KeyError):
            pass
    import httpx

    endpoint = os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")
    headers = {"Authorization": f"Bearer {os.environ['HF_TOKEN']}"} if os.environ.get("HF_TOKEN") else {}
    base = f"{endpoint}/{repo_id}/resolve/{revision}"
    try:
        with httpx.Client(timeout=timeout, headers=headers, follow_redirects=False) as client:
            resp = _get(client, f"{base}/config.json")
            if resp.status_code in (401, 403):
                return (
                    None,
                    None,
                    f"{endpoint} answered {resp.status_code} for {repo_id}: gated or private (set HF_TOKEN)",
                )
            if resp.status_code == 404:
                return None, None, f"{endpoint} has no {repo_id}/config.json (404)"
            if resp.status_code != 200:
                return None, None, f"{endpoint} answered {resp.status_code} for {repo_id}/config.json"
            config = resp.json()
            index = _get(client, f"{base}/model.safetensors.index.json")
            total = (
                (index.json().get("metadata") or {}).get("total_size") if index.status_code == 200 else None
            )
    except (httpx.HTTPError, ValueError) as exc:
        return None, None, f"could not reach {endpoint} for {repo_id}: {type(exc).__name__}: {exc}"
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps({"config": config, "total_size": total}))
    except OSError:
        pass  # a read-only home only costs the cache
    return config, total, ""


def _get(client: Any, url: str) -> Any:
    """Follow the hub's redirects to its CDN only on the same host, so the token never leaves it."""
    import httpx

    resp = client.get(url)
    hops = 0
    while resp.is_redirect and hops < 5:
        target = httpx.URL(url).join(resp.headers["location"])
        same_host = target.host == httpx.URL(url).host
        resp = client.get(target) if same_host else httpx.get(target, timeout=client.timeout)
        url, hops = str(target), hops + 1
    return resp
