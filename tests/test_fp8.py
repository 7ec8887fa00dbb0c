"""llm_doctor.fp8: FP8 fixes only where the GPUs can run them (compute capability 8.9+)."""

from __future__ import annotations

import pytest

from llm_doctor import fp8
from llm_doctor.facts import Facts
from llm_doctor.facts.gpu import Gpu, GpuFacts


@pytest.mark.parametrize(
    ("ccs", "names", "expected"),
    [
        ([8.0], ["NVIDIA A100-SXM4-80GB"], False),
        ([9.0], [], True),
        ([8.9, 8.0], [], False),  # one older GPU in the group decides
        ([], ["NVIDIA A100-SXM4-80GB"], False),
        ([], ["NVIDIA A10G"], False),
        ([], ["NVIDIA H100 80GB HBM3"], True),
        ([], ["NVIDIA L40S"], True),
        ([], ["NVIDIA RTX 6000 Ada Generation"], True),
        ([], ["Some GPU"], None),
        ([], [], None),
    ],
)
def test_supported(ccs, names, expected):
    assert fp8.supported(ccs, names) is expected


def test_from_nvml_facts_prefers_the_compute_capability():
    facts = Facts(gpus=GpuFacts(available=True, gpus=[Gpu(index=0, name="NVIDIA H100 80GB HBM3", compute_capability="8.0")]))
    assert fp8.from_facts(facts) is False
    assert fp8.from_facts(Facts()) is None
