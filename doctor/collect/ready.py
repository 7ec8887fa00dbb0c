"""`--wait-ready SECONDS`: poll a server that is still starting until it answers.

A deploy pipeline starts the engine and runs the doctor straight after; loading weights takes
minutes, so the first probe would only ever see "connection refused". This polls the engine's
health route (`/health`: vLLM, SGLang, TGI and llama-server have one; llama-server answers 503
while it loads) and then `/v1/models`, with a growing pause between polls, and says on stderr what
it sees each time that changes. Ready means both answer with a status below 500 (a 401 is a
server that is up: the access layer judges the key). With --docker/--k8s it also asks, between
polls, whether the container or pod has died (exited, CrashLoopBackOff): a crashed server is reported
at once, not after the whole wait. It only records; `access.ready` judges.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from llm_doctor.facts.gate import ReadyFacts, ReadyPoll

FIRST_PAUSE_S = 0.5
MOST_PAUSE_S = 5.0
GROWTH = 1.5
MOST_REQUEST_S = 5.0
MAX_BODY = 4096  # only the status matters; a body is read so the connection ends cleanly


def routes(base_url: str) -> tuple[str, str]:
    """(health URL at the server's root, models URL under the API base)."""
    parts = urlsplit(base_url)
    base = base_url.rstrip("/")
    models = base + "/models" if base.endswith("/v1") else base + "/v1/models"
    return f"{parts.scheme}://{parts.netloc}/health", models


def wait(
    base_url: str,
    api_key: str | None,
    timeout_s: float,
    verify: bool | str = True,
    say: Callable[[str], None] = lambda msg: None,
    gone: Callable[[], str] = lambda: "",
) -> ReadyFacts:
    """`gone`: why the server can no longer come up ("" while it may), asked after each failed poll."""
    import httpx

    from llm_doctor.collect import safe_http

    facts = ReadyFacts(timeout_s=timeout_s)
    try:
        health, models = routes(base_url)
    except ValueError as exc:  # nothing to wait for: access.base_url judges the URL
        facts.stopped = f"the base URL cannot be parsed ({exc})"
        say(facts.stopped)
        return facts
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    start = time.monotonic()
    end = start + timeout_s
    pause = FIRST_PAUSE_S

    def poll(client: httpx.Client, url: str) -> ReadyPoll:
        seen = ReadyPoll(round(time.monotonic() - start, 2), url)
        try:
            left = max(0.2, min(MOST_REQUEST_S, end - time.monotonic()))
            seen.status = safe_http.fetch(client, "GET", url, left, MAX_BODY, headers=headers).status
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:  # a malformed URL is seen, and judged by access.base_url
            seen.error = _reason(exc)
            if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL, ValueError)):
                facts.stopped = f"the base URL cannot be requested ({seen.error})"
        last = facts.seen[-1] if facts.seen else None
        if last is None or (last.url, last.seen) != (url, seen.seen):
            facts.seen.append(seen)
            say(f"{seen.at_s:.1f} s: {url}: {seen.seen}")
        else:
            facts.seen[-1] = seen  # the same as before: keep the latest time only
        return seen

    with safe_http.client(verify=verify) as client:
        while True:
            facts.polls += 1
            h = poll(client, health) if facts.health_route is not False else None
            if h is not None and h.status is not None:
                facts.health_route = h.status not in (404, 405)
            if (h is None or _up(h)) and _up(poll(client, models)):
                facts.ready = True
                break
            facts.stopped = facts.stopped or gone()
            if facts.stopped:
                say(facts.stopped)
                break
            left = end - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(pause, left))
            pause = min(MOST_PAUSE_S, pause * GROWTH)
    facts.waited_s = round(time.monotonic() - start, 2)
    say(f"ready after {facts.waited_s:.1f} s" if facts.ready else f"not ready after {facts.waited_s:.1f} s")
    return facts


DEAD_STATES = ("exited", "dead")
# kubectl container states from which a pod does not come up by itself
DEAD_REASONS = ("CrashLoopBackOff", "Error", "OOMKilled", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError",
                "CreateContainerError", "InvalidImageName", "Completed")  # fmt: skip


def container_gone(docker: str | None, k8s: str | None, namespace: str | None) -> Callable[[], str]:
    """A `gone` for wait(): asks `docker inspect` or `kubectl get pod` whether the server's container
    has stopped. A tool that is missing or fails counts as "not known to be gone" (keep waiting)."""

    def ask(argv: list[str]) -> str:
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return out.stdout.strip() if out.returncode == 0 else ""

    def docker_gone() -> str:
        state = ask(["docker", "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", docker or ""]).split()
        if len(state) == 2 and state[0] in DEAD_STATES:
            return f"container {docker} {state[0]} (exit code {state[1]})"
        return ""

    def pod_gone() -> str:
        path = "{.status.phase}{range .status.containerStatuses[*]} {.state.waiting.reason}{.state.terminated.reason}{end}"
        argv = ["kubectl", "get", "pod", k8s or "", "-o", f"jsonpath={path}"] + (["--namespace", namespace] if namespace else [])
        phase, *reasons = ask(argv).split() or [""]
        dead = [r for r in reasons if r in DEAD_REASONS]
        if phase in ("Failed", "Succeeded") or dead:
            return f"pod {k8s} is {phase}" + (f" ({', '.join(dead)})" if dead else "")
        return ""

    if docker:
        return docker_gone
    if k8s:
        return pod_gone
    return lambda: ""


def _up(seen: ReadyPoll) -> bool:
    return seen.status is not None and seen.status < 500


def _reason(exc: Exception) -> str:
    """What a person needs from a failed poll: refused, timed out, or the error's own words."""
    import httpx

    if isinstance(exc, httpx.ConnectError):
        text = str(exc)
        return "connection refused" if "refused" in text.lower() else f"cannot connect: {text[:120]}"
    if isinstance(exc, httpx.TimeoutException):
        return "no answer in time"
    return f"{type(exc).__name__}: {str(exc)[:120]}"
