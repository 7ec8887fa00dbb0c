"""Does the engine see the GPUs? No NVIDIA runtime / device request in the container, an empty
CUDA_VISIBLE_DEVICES, a CPU-only torch, or a Ray/worker process given no GPU."""

from __future__ import annotations

import re

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView

# Ascend's own words (torch_npu, its ACL runtime, its device variable), never "NPU" as one of the accelerators a
# generic message lists (SGLang: "No accelerator (CUDA, XPU, HPU, NPU) is available")
ASCEND = re.compile(r"torch_npu|NPU function error|\baclInit\b|ASCEND_RT_VISIBLE_DEVICES|\bnpu-smi\b|/dev/davinci")


@check("load.gpu_visibility", "load", codes=["load.gpu_not_visible"], events=["gpu_not_visible", "device_ordinal", "cuda_mismatch"])
def gpu_visibility(facts: Facts, log: LogView) -> Outcome:
    """The engine sees the GPUs it was meant to use."""
    found = [e for e in log.events("gpu_not_visible", "device_ordinal") if not le.cuda_build_on_rocm(e, log.setup.rocm)]
    if not found:
        return Outcome(detail="no missing-GPU error in the log")
    if log.logs.setup.gpu_found and all(e.kind == "gpu_not_visible" and not e.fatal for e in found):
        # Ollama tries each libcuda it finds (discover/gpu.go) and logs a failed cuInit at INFO: one that fails before another
        # that works is no failure
        return Outcome(detail="a CUDA library failed to initialise, but the engine then found a GPU with another one")
    evidence = le.evidence(found) + log.earlier_runs()
    ordinal = all(e.kind == "device_ordinal" for e in found)
    fixes = [
        Fix("Docker: add the NVIDIA runtime's GPU request to the `docker run` command", "--gpus all"),
        _k8s_request(facts),
        Fix("Check what the process sees", "nvidia-smi -L; python -c 'import torch; print(torch.cuda.device_count())'"),
    ]
    text = " ".join(line for e in found for line in e.lines)
    if "system not yet initialized" in text or "Error 802" in text:
        # cudaErrorSystemNotReady: an NVSwitch system (HGX A100/H100) whose fabric manager is not running
        fixes.insert(0, Fix("NVSwitch system: start NVIDIA Fabric Manager (its version must match the driver's) before CUDA "
                            "can use the GPUs", "sudo systemctl enable --now nvidia-fabricmanager"))
    if ASCEND.search(text):
        # Ascend (torch_npu, vLLM-Ascend): the NPUs reach a container as /dev/davinci* devices, chosen by ASCEND_RT_VISIBLE_DEVICES
        fixes = [Fix("Ascend NPU: pass the NPU devices into the container and pick them by index",
                     "--device /dev/davinci0 --device /dev/davinci_manager --device /dev/devmm_svm --device /dev/hisi_hdc "
                     "-v /usr/local/Ascend/driver:/usr/local/Ascend/driver -e ASCEND_RT_VISIBLE_DEVICES=0"),
                 Fix("Check what the host and the process see", "npu-smi info; python -c 'import torch_npu, torch; print(torch.npu.device_count())'")]
    if ordinal:
        tp = le.deployment_value(facts, "tensor_parallel_size")
        fixes.insert(0, Fix("A worker asked for a GPU index it cannot see: give each worker its GPUs (CUDA_VISIBLE_DEVICES / Ray num_gpus)"
                            + (f" or lower TP {tp} to the GPUs visible" if tp else "")))
    # TGI's flash models that could not import because torch saw no GPU ("requires Flash Attention enabled models"): its symptom
    flash = ["load.cuda_mismatch"] if le.only_flash_models_missing(log.events("cuda_mismatch")) else []
    # NCCL cannot build a communicator on a GPU the rank cannot see (CUDACHECK in NVIDIA/nccl src/include/checks.h quotes
    # the CUDA error, torch's DistBackendError repeats it as "Last error:"): the NCCL failure is this one's symptom
    return Outcome([Finding("load.gpu_not_visible", "the engine does not see the GPU(s)", evidence, fixes,
                            explains=flash + ["load.nccl_failed"] + le.CLIENT_SYMPTOMS)])


def _k8s_request(facts: Facts) -> Fix:
    """The pod spec's GPU request: TP x PP GPUs when the launch command says so, else the rule."""
    tp, pp = le.deployment_value(facts, "tensor_parallel_size"), le.deployment_value(facts, "pipeline_parallel_size")
    if tp:
        return Fix("Kubernetes: request the GPUs in the pod spec (tensor x pipeline parallel size)",
                   f"resources.limits: nvidia.com/gpu: {int(tp) * int(pp or 1)}")  # type: ignore[call-overload]
    return Fix("Kubernetes: request the GPUs in the pod spec under resources.limits, nvidia.com/gpu: as many as the "
               "engine's tensor-parallel size x pipeline-parallel size")
