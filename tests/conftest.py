"""Shared pytest setup. Keep this small: fixtures live beside the tests that use them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.peers.fixtures import litellm_proxy, llama_server  # noqa: E402,F401  (real peers; see tests/peers/)

PEER_FIXTURES = {"litellm_proxy", "llama_server"}
PEER_FILES = {"test_metrics_llamacpp.py", "test_ray_cluster.py"}  # their own llama-server; a Ray cluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`.ci/run` uses `-n 2 --dist loadgroup`) every test that runs a real peer or
    a Ray cluster goes to one worker, in one group: the session's peers start once, and two
    llama-servers or a Ray cluster never share the 2 cores with each other."""
    for item in items:
        if runs_a_peer(item):
            item.add_marker(pytest.mark.xdist_group("peers"))


def runs_a_peer(item: pytest.Item) -> bool:
    name = item.path.name
    code = getattr(getattr(item, "function", None), "__code__", None)
    return (
        name.startswith("test_peer_")
        or name in PEER_FILES
        or bool(PEER_FIXTURES & set(getattr(item, "fixturenames", ())))
        or (code is not None and "manifest_entry" in code.co_names)  # starts a peer of its own
    )
