"""Shared pytest setup. Keep this small: fixtures live beside the tests that use them."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.peers.fixtures import litellm_proxy, llama_server  # noqa: E402,F401  (real peers; see tests/peers/)
