"""The wheel installs one import name of its own (llm_doctor) and everything the tool reads at run time.

Built for real with setuptools from a copy of the project's files (so no build/ or egg-info lands in the
checkout), then installed into a bare folder and run from there with the checkout out of sys.path: a
module or data file left out of pyproject.toml fails here, not on a user's machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"llm_doctor": ROOT / "doctor", "llm_doctor.checks": ROOT / "checks"}


def package_folders() -> set[str]:
    """Every folder holding Python modules under doctor/ and checks/, as the import name it gets."""
    names = set()
    for name, top in FOLDERS.items():
        for folder in [top, *top.rglob("*")]:
            if folder.is_dir() and "__pycache__" not in folder.parts and any(folder.glob("*.py")):
                names.add(".".join([name, *folder.relative_to(top).parts]))
    return names


def test_pyproject_lists_every_package_folder_under_its_unique_name():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"llm_doctor": "doctor", "llm_doctor.checks": "checks"}
    assert set(setuptools["packages"]) == package_folders()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    pytest.importorskip("setuptools", minversion="77.0.3")
    src = tmp_path_factory.mktemp("src")
    for name in ("doctor", "checks"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(src)], check=True, capture_output=True, timeout=300)
    (built,) = out.glob("llm_doctor-*.whl")
    return built


def test_the_wheel_installs_only_llm_doctor_and_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"llm_doctor"}
    for data in ("llm_doctor/data/models.json", "llm_doctor/data/gpus.json", "llm_doctor/data/catalogue/vllm.jsonl",
                 "llm_doctor/checks/load/oom.py", "llm_doctor/logparse/events.py"):
        assert data in names


def test_the_installed_wheel_runs_with_the_checkout_out_of_reach(wheel, tmp_path):
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    # -I: neither the working directory nor PYTHONPATH; the wheel's folder goes first, ahead of the
    # editable install's finder, and the assert proves the modules came from it
    site = repr(str(target))
    code = (f"import sys; sys.path.insert(0, {site}); import llm_doctor; assert llm_doctor.__file__.startswith({site});"
            "from llm_doctor.cli import main; main()")
    log = ROOT / "fixtures" / "logs" / "vllm-0.4.1-a10g-mistral7b-kv-cache-insufficient.log"
    out = subprocess.run([sys.executable, "-I", "-c", code, "analyze", str(log), "--format", "json"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    report = json.loads(out.stdout)
    assert report["findings"][0]["code"] == "load.kv_cache_insufficient"
    listing = subprocess.run([sys.executable, "-I", "-c", code, "catalogue"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120)
    assert listing.returncode == 0 and "vllm" in listing.stdout
