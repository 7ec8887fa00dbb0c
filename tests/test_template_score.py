"""A catalogue template and a hand rule of another kind on one line (doctor/logparse/events.match): the one
that pins down more wording wins, and a template's unnamed `{}` is no wording it pinned down.

openai-python 0.28's api_requestor.py raises `"Invalid response object from API: %r (HTTP response code
was %d)" % (rbody, rcode)` (the catalogue's clients_python.jsonl line for it): the `{}` holds the server's
whole body, here vLLM's ErrorResponse carrying PyTorch's CUDA out-of-memory message
(c10/cuda/CUDACachingAllocator.cpp). Counted as fixed text, the body made the client's wrapper outvote the
hand rule that reads the out-of-memory message and its numbers.
"""

from __future__ import annotations

from llm_doctor.logparse import events

OOM = ("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.69 GiB total capacity; 22.84 GiB already allocated; "
       "7.06 MiB free; 23.18 GiB reserved in total by PyTorch)")
# composed: openai 0.28's APIError text around vLLM's ErrorResponse JSON holding the OOM line above
WRAPPED = ("openai.error.APIError: Invalid response object from API: '{\"object\":\"error\",\"message\":\"" + OOM +
           "\",\"type\":\"InternalServerError\",\"code\":500}' (HTTP response code was 500)")


def test_an_unnamed_placeholder_is_not_fixed_text() -> None:
    rule, values = events.match(WRAPPED)  # type: ignore[misc]
    assert (rule.kind, rule.source) == ("cuda_oom", "")
    assert values["gpu"] == 0 and values["total"] == 23.69


def test_the_template_keeps_its_own_line() -> None:
    # the catalogue's sample for the same template: a proxy's HTML page, no cause inside
    line = ("openai.error.APIError: Invalid response object from API: '<html>\\r\\n<head><title>502 Bad Gateway</title>"
            "</head>' (HTTP response code was 502)")
    rule, _ = events.match(line)  # type: ignore[misc]
    assert rule.kind == "client_bad_response"


def test_a_templates_placeholders_are_not_counted_named_or_not() -> None:
    # httpx _models.py raise_for_status: "Server error '{status} {reason}' for url '{url}'" (clients_python.jsonl): the
    # template's literal text still outweighs the hand rule's "503 Service Unavailable"
    rule, values = events.match("httpx.HTTPStatusError: Server error '503 Service Unavailable' for url "
                                "'http://localhost:8000/v1/chat/completions'")  # type: ignore[misc]
    assert (rule.kind, values["status"]) == ("http_response", 503)
