"""The /dev/shm fix is sized from what the log says (checks/load/shm.py), never a fixed value: Ray's own
advice, Ray's object store, the request that did not fit; with no number, the command that shows what it has."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.report import build_report


def shm_finding(tmp_path: Path, text: str):
    path = tmp_path / "engine.log"
    path.write_text(text)
    facts = load_paths([str(path)], Deadline(60))
    report = build_report(run_checks(facts, select(load_checks()), Deadline(60)), facts)
    (f,) = [f for f in report.findings if f.code == "load.shm_insufficient"]
    return f


@pytest.mark.parametrize(("line", "size"), [
    # vllm-project/vllm#1116 (Ray 2.x python/ray/_private/services.py): Ray prints the size it wants, object store * 1.1 in GiB
    ("2023-09-20 18:06:25,855 WARNING services.py:1889 -- WARNING: The object store is using /tmp instead of /dev/shm because "
     "/dev/shm has only 67108864 bytes available. This will harm performance! You may be able to free up space by deleting "
     "files in /dev/shm. If you are inside a Docker container, you can increase /dev/shm size by passing '--shm-size=10.24gb' "
     "to 'docker run' (or add it to the run_options list in a Ray cluster config). Make sure to set this to more than 30% of "
     "available RAM.", 11),
    # Ray's ValueError (services.py determine_plasma_store_config), decimal GB: 15.03e9 B * 1.1 = 15.4 GiB
    ("ValueError: The configured object store size (15.032385536 GB) exceeds /dev/shm size (4.500000768 GB). This will harm "
     "performance. Consider deleting files in /dev/shm or increasing its size with --shm-size in Docker. To ignore this "
     "warning, set RAY_OBJECT_STORE_ALLOW_SLOW_STORAGE=1.", 16),
])
def test_the_shm_size_is_computed_from_the_log(tmp_path: Path, line: str, size: int) -> None:
    f = shm_finding(tmp_path, line + "\n")
    assert [x.command for x in f.fixes][:2] == ["--ipc=host", f"--shm-size={size}g"]
    assert f"sizeLimit: {size}Gi" in f.fixes[2].summary
    assert any(e.startswith(f"/dev/shm of {size} GiB: ") for e in f.evidence)


def test_no_stated_size_gives_the_command_that_shows_it(tmp_path: Path) -> None:
    # NCCL src/misc/shmutils.cc (nccl.jsonl): the segment per peer is no total the container needs
    f = shm_finding(tmp_path, "NCCL WARN Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)\n")
    assert [x.command for x in f.fixes][:2] == ["--ipc=host", "df -h /dev/shm"]
    assert not any("--shm-size=" in (x.command or "") + x.summary for x in f.fixes)
