"""Fetch a model's config.json and safetensors index from the Hugging Face hub (I/O, so here).

Honours HF_ENDPOINT (mirrors, air-gapped proxies) and HF_TOKEN (gated repos; sent only to that
endpoint's origin, never logged), and caches answers on disk so a second `plan` is offline. Failures come
back as a reason string for a finding, never as an exception.
"""

from __future__ import annotations

import json
import os
import time
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
    """(config, safetensors total_size, reason): config None with a reason when unreachable.
    `timeout` bounds the whole fetch (both files, every redirect), in wall-clock time."""
    safe = repo_id.replace("/", "--")
    cached = cache_dir() / f"{safe}@{revision}.json"
    if cached.is_file():
        try:
            data = json.loads(cached.read_text())
            return data["config"], data.get("total_size"), ""
        except (ValueError, KeyError):
            pass
    import httpx

    from llm_doctor.collect import safe_http

    endpoint = os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")
    token = os.environ.get("HF_TOKEN") or ""
    base = f"{endpoint}/{repo_id}/resolve/{revision}"
    try:
        with safe_http.client(timeout=timeout) as client:
            end = time.monotonic() + timeout
            resp = _get(client, f"{base}/config.json", endpoint, token, end)
            if resp.status in (401, 403):
                return (
                    None,
                    None,
                    f"{endpoint} answered {resp.status} for {repo_id}: gated or private (set HF_TOKEN)",
                )
            if resp.status == 404:
                return None, None, f"{endpoint} has no {repo_id}/config.json (404)"
            if resp.status != 200:
                return None, None, f"{endpoint} answered {resp.status} for {repo_id}/config.json"
            config = resp.json()
            if not isinstance(config, dict):
                return None, None, f"{endpoint}: {repo_id}/config.json is not a JSON object"
            index = _get(client, f"{base}/model.safetensors.index.json", endpoint, token, end)
            meta = index.json().get("metadata") if index.status == 200 else None
            total = meta.get("total_size") if isinstance(meta, dict) else None
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        return None, None, f"could not reach {endpoint} for {repo_id}: {type(exc).__name__}: {exc}"
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps({"config": config, "total_size": total}))
    except OSError:
        pass  # a read-only home only costs the cache
    return config, total, ""


MAX_FILE = 16 * 1024 * 1024  # a config.json or safetensors index is kilobytes; bound a hostile one


def _get(client: Any, url: str, endpoint: str, token: str, end: float) -> Any:
    """GET with the hub's redirects (to its CDN) followed by hand, all hops together done by `end`
    (a monotonic time), each bounded in bytes. The token is bound to the endpoint's origin (scheme, host and port): it goes with a hop
    only when that hop is on the same origin, never to another port of the same host."""
    import httpx

    from llm_doctor.collect import safe_http

    hops = 0
    while True:
        headers = {"Authorization": f"Bearer {token}"} if token and safe_http.same_origin(url, endpoint) else {}
        resp = safe_http.fetch(client, "GET", url, max(0.05, end - time.monotonic()), MAX_FILE, headers=headers)
        location = resp.headers.get("location")
        if resp.status not in (301, 302, 303, 307, 308) or not location or hops >= 5:
            return resp
        url, hops = str(httpx.URL(url).join(location)), hops + 1
