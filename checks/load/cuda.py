"""Do the driver, CUDA runtime, torch and the engine's kernels match the GPU? (no kernel image for
this compute capability, driver older than the runtime, a CUDA library missing or from another
version)."""

from __future__ import annotations

import re

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logparse.events import TOOLCHAIN
from llm_doctor.logview import LogView

# cudaErrorCallRequiresNewerDriver (36): the runtime called an API this driver does not have (families.jsonl)
NEWER_DRIVER = re.compile(r"API call is not supported in the installed CUDA driver|CallRequiresNewerDriver|CALL_REQUIRES_NEWER_DRIVER", re.I)
# the linker (under Triton or torch inductor) finds no libcuda (families.jsonl)
NO_LIBCUDA = re.compile(r"cannot find -l:?(?:lib)?cuda\b|libcuda\.so cannot found", re.I)
# the program a kernel JIT build could not run (doctor/data/families.jsonl "kernel toolchain": subprocess's FileNotFoundError
# names it; torch.utils.cpp_extension says "Ninja is required to load C++ extensions")
TOOL_MISSING = re.compile(rf"No such file or directory: [\'\"`‘]?(?:[^\'\"`’\s]*/)?(?P<tool>{TOOLCHAIN})(?=[\'\"`’\s]|$)|"
                          r"\b(?P<ninja>Ninja) is required to load C\+\+", re.I)
# TensorRT(-LLM)'s words for an engine built by another version or for another GPU (trtllm.jsonl)
# "ImportError: /usr/local/lib/python3.10/dist-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c10..."
SO_UNDEFINED = re.compile(r"(?P<so>/\S+?\.so)(?:\.[\d.]+)?: undefined symbol")
# TensorRT's builder refusing the GPU (trtllm.jsonl): a GPU this TensorRT release does not build for, older or newer than it
TRT_SM = re.compile(r"Target GPU SM (?P<sm>\d+) is not supported by this TensorRT release", re.I)
TRT_ENGINE_BUILT_ELSEWHERE = ("engine plan file", "deserialize", "different TensorRT-LLM version", "Tensor names in engine",
                              "not found; expected shape", "SERIALIZATION_VERSION", "Serialized Engine Version",
                              "modelInstanceState: [json.exception", "real length", "d == a + length")


@check("load.cuda", "load", codes=["load.cuda_mismatch"], events=["cuda_mismatch", "gpu_not_visible"])
def cuda(facts: Facts, log: LogView) -> Outcome:
    """The CUDA stack (driver, runtime, torch, engine kernels) fits this GPU."""
    found = [e for e in log.events("cuda_mismatch", "gpu_not_visible") if e.kind == "cuda_mismatch" or le.cuda_build_on_rocm(e, log.setup.rocm)]
    if not found:
        return Outcome(detail="no CUDA/driver mismatch in the log")
    text = " ".join(line for e in found for line in e.lines)
    evidence = le.evidence(found) + log.earlier_runs()
    cc = facts.logs.setup.compute_capability if facts.logs else None
    floor = le.gpu_below_floor(found)
    so = SO_UNDEFINED.search(text)
    if any(le.cuda_build_on_rocm(e, log.setup.rocm) for e in found):
        # a CUDA wheel's extension (sgl_kernel, vllm._C, flash-attn) dlopens the NVIDIA driver's libcuda on an AMD machine
        fixes = [Fix("A CUDA build of the engine's kernels is installed on this ROCm machine: install the ROCm build (the engine's "
                     "ROCm image or wheels from its ROCm index) instead of the CUDA wheel",
                     "python -c 'import torch; print(torch.__version__, torch.version.hip)'")]
    elif so:
        # an extension's binary built against another torch (a c10/torch C++ symbol) or CUDA than the ones installed
        pkg = _package(so.group("so"))
        fixes = [Fix(f"{so.group('so').rsplit('/', 1)[-1]} was built against another torch/CUDA than the one installed: reinstall "
                     f"{pkg or 'the package it belongs to'} for this torch (or install the torch version its wheel names)",
                     f"pip install --force-reinstall --no-cache-dir {pkg}" if pkg else None),
                 Fix("Or use the engine's official container image, whose torch, CUDA and extensions were built together")]
    elif tool := TOOL_MISSING.search(text):
        name = (tool.group("tool") or tool.group("ninja")).lower()
        # the engine compiles its kernels (FlashInfer, torch C++ extensions, Triton) at first use: the tool must be in its environment
        fixes = [Fix(f"The engine JIT-compiles its kernels with {name}, which is not installed where it runs: install it in the "
                     "serving environment (or use the engine's official image, which ships its build tools)",
                     "pip install ninja" if name == "ninja" else f"which {name}"),
                 Fix("Or point CUDA_HOME at a CUDA toolkit whose bin/ holds nvcc" if name == "nvcc" else
                     "Or install the prebuilt kernels (the engine's JIT cache or AOT wheel) so nothing is compiled at start-up")]
    elif "bitsandbytes" in text or "CUDA Setup failed despite" in text:
        # bitsandbytes/cextension.py: no native library for the CUDA version torch links (or a CPU-only build loaded)
        fixes = [Fix("bitsandbytes has no native binary for this CUDA runtime: install a release that ships one for it",
                     "pip install -U bitsandbytes"),
                 Fix("Or load a shipped binary of another installed CUDA (BNB_CUDA_VERSION=121 and its libraries on "
                     "LD_LIBRARY_PATH); `python -m bitsandbytes` shows what it found", "python -m bitsandbytes")]
    elif re.search(r"FlashAttention is only supported on CUDA [\d.]+ and above", text):
        # flash-attn's setup.py: the nvcc it compiles with (CUDA_HOME) is older than it builds with, whatever the GPU
        fixes = [Fix("flash-attn is being compiled with an nvcc older than it supports: point CUDA_HOME at a CUDA toolkit of "
                     "torch's CUDA version, or install a prebuilt flash-attn wheel for this torch/CUDA", "nvcc -V")]
    elif "Unknown CUDA arch" in text:
        # torch/utils/cpp_extension.py building an extension for an arch this torch has no name for: torch is older than the GPU
        fixes = [Fix("This torch does not know the GPU's architecture: install a torch release built for it, or set "
                     "TORCH_CUDA_ARCH_LIST to an arch it lists",
                     "python -c 'import torch; print(torch.__version__, torch.cuda.get_arch_list())'")]
    elif "Cannot select: intrinsic %llvm.nvvm" in text or "is not a recognized processor for this target" in text:
        # LLVM (SelectionDAGISel, MCSubtargetInfo) inside Triton: its NVPTX backend has no code for this GPU's sm_
        fixes = [Fix("Triton's compiler does not know this GPU: install the torch/triton release that targets it (for a new GPU "
                     "the newest torch built for its CUDA), or run the engine without the Triton kernels (eager, another backend)",
                     "pip install -U torch triton")]
    elif "ggml was not compiled with any CUDA arch" in text:
        # ggml-cuda/common.cuh: every arch in the build's CMAKE_CUDA_ARCHITECTURES is above this GPU's
        arch = le.first_value(found, "arch")
        fixes = [Fix("Rebuild llama.cpp with this GPU's architecture in CMAKE_CUDA_ARCHITECTURES (or a release built for it)",
                     f"cmake -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES={int(arch) // 10}" if isinstance(arch, int) else None)]
    elif re.search(r"flash[ -]?attention\S*(?: V2)? is not installed|flash_attn seems to be not installed|"
                   r"Could not import (?:vllm paged attention|attention_?kernels)", text, re.I):
        # TGI's imports of its attention kernels (layers/attention, utils/flash_attn.py): the image or install lacks them
        fixes = [Fix("The engine's attention kernels are not installed for this torch/CUDA: use the engine's official image, "
                     "or install them to match", "pip install flash-attn --no-build-isolation")]
    elif re.search(r"FlashAttention only supports|flash[ -]?attention", text, re.I):
        # flash-attn 2 (csrc/flash_attn/flash_api.cpp) and TGI's flash/paged attention import only on GPUs they were built for
        fixes = [Fix("The flash-attention kernels do not run on this GPU (flash-attn 2 needs compute capability 8.0+, TGI's "
                     "7.5+): use another attention implementation (vLLM: VLLM_ATTENTION_BACKEND=XFORMERS or TRITON_ATTN; "
                     "transformers: attn_implementation=\"sdpa\"; TGI: a single unsharded shard, or a newer GPU)")]
    elif trt_sm := TRT_SM.search(text):
        # TensorRT builds for the GPUs of its release only: 10.x dropped SM 6.x/7.0, and a release older than the GPU does not know it
        sm = trt_sm.group("sm")
        fixes = [Fix(f"This TensorRT release does not build for SM {sm}: use a TensorRT-LLM release (and its container) whose TensorRT "
                     f"supports SM {sm}: an older one for a GPU it dropped (Pascal, Volta), a newer one for a GPU newer than it"),
                 Fix("Check which TensorRT is installed", "python -c 'import tensorrt; print(tensorrt.__version__)'")]
    elif floor:
        need = le.first_value(found, "need")
        fixes = [Fix(f"This GPU{f' (compute capability {cc})' if cc else ''} is older than every kernel this build ships"
                     f"{f' (it needs {need} or newer)' if need else ''}: no dtype or flag fixes that; run on a newer GPU"),
                 Fix("Or use an engine or build that still supports this GPU (llama.cpp built with its CUDA arch, an older "
                     "release, or a source build with TORCH_CUDA_ARCH_LIST set to it)")]
    elif any(w in text for w in TRT_ENGINE_BUILT_ELSEWHERE):
        fixes = [Fix("Rebuild the TensorRT engine here (trtllm-build from the checkpoint, in this image): a plan runs only "
                     "with the TensorRT/TensorRT-LLM version and the GPU architecture it was built with")]
    elif "no kernel image" in text or "not compatible" in text or "No compiled " in text:
        # vLLM's csrc dispatch ("No compiled cutlass_scaled_mm for ... CUDA device capability: 121") names the GPU's capability
        stated = le.first_value(found, "cc")
        cc = cc or (f"{stated // 10}.{stated % 10}" if isinstance(stated, int) and stated >= 10 else None)
        sm = f"sm_{int(float(cc) * 10)}" if cc else "this GPU's compute capability"
        fixes = [Fix(f"Install a build compiled for {sm} (a newer wheel / image, or build from source with TORCH_CUDA_ARCH_LIST={cc or '<cc>'})"),
                 Fix("Check what torch was built for", "python -c 'import torch; print(torch.cuda.get_arch_list())'")]
    elif "driver/library version mismatch" in text.lower() or "LibRmVersionMismatch" in text:  # nvidia-container-cli writes it lower-case
        # NVML's own check: the loaded kernel module is from another driver release than libnvidia-ml
        fixes = [Fix("The NVIDIA driver was upgraded but the old kernel module is still loaded: reboot the host (or unload and "
                     "reload the nvidia modules); the two versions here must agree", "cat /proc/driver/nvidia/version; nvidia-smi")]
    elif "forward compatibility" in text or "unsupported display driver" in text:
        # cudaErrorCompatNotSupportedOnDevice / cudaErrorSystemDriverMismatch: a user-space libcuda (a cuda-compat
        # package in the image) that the host's kernel driver or this GPU cannot use
        fixes = [Fix("A CUDA forward-compatibility libcuda (cuda-compat in the image) is loaded where the host driver or GPU "
                     "cannot use it: take it off LD_LIBRARY_PATH so the host's libcuda is used, or use an image built for "
                     "the CUDA version the host driver supports (`nvidia-smi`, top right)", "ldconfig -p | grep libcuda.so")]
    elif "GLIBC" in text:
        glibc = le.first_value(found, "glibc")
        fixes = [Fix(f"The binary was built for a newer C/C++ runtime{f' ({glibc})' if glibc else ''} than this system has: use the "
                     "engine's official container image, or a wheel built for this OS; in conda, a newer libstdc++",
                     "conda install -c conda-forge libstdcxx-ng" if "GLIBCXX" in text else None)]
    elif "torchvision" in text:
        fixes = [Fix("torchvision was built for another torch than the one installed: install the torchvision release that "
                     "pairs with this torch (the same index URL, e.g. .../whl/cu121)", "pip install --force-reinstall torchvision")]
    elif (req := re.search(r"unsatisfied condition: cuda>=(?P<cuda>[\d.]+)", text)):
        # libnvidia-container's check of the image's NVIDIA_REQUIRE_CUDA against the host driver's CUDA version
        fixes = [Fix(f"The image needs CUDA {req.group('cuda')}+ but the host driver offers less: upgrade the NVIDIA driver, or "
                     "pull an image built for the CUDA version `nvidia-smi` shows (top right)", "nvidia-smi"),
                 Fix("If the GPU runs newer CUDA through forward compatibility (data-center GPUs with cuda-compat), skip the "
                     "image's requirement check", "-e NVIDIA_DISABLE_REQUIRE=1")]
    elif "NoBinaryForGpu" in text:
        # ROCm clr hip_code_object.cpp: the binary's offload bundle holds no code object for this GPU's gfx target
        fixes = [Fix("This ROCm/PyTorch build has no kernels for the GPU's gfx target: install a build that lists it "
                     "(`rocminfo | grep gfx`), or run it as the nearest supported target of the same family",
                     "HSA_OVERRIDE_GFX_VERSION=10.3.0")]
    elif "driver version is insufficient" in text or "driver on your system is too old" in text or NEWER_DRIVER.search(text):
        fixes = [Fix("Upgrade the NVIDIA driver, or use a build for the CUDA version the driver supports (see `nvidia-smi`, top right)")]
    elif NO_LIBCUDA.search(text):
        # Triton (libcuda_dirs) and torch inductor link the driver's libcuda at run time: the NVIDIA container runtime
        # mounts it, but where the image's linker does not look (GKE: /usr/local/nvidia/lib64), or not at all
        fixes = [Fix("The linker finds no libcuda.so.1 (the driver's library, mounted by the NVIDIA container runtime): find the "
                     "folder the driver put it in and point the build at it (TRITON_LIBCUDA_PATH=<that folder>, or add it to the "
                     "linker cache with ldconfig)", "ldconfig -p | grep libcuda.so")]
    else:
        lib = le.first_value(found, "lib")
        fixes = [Fix(f"Install the engine wheel built for this machine's CUDA{f' ({lib} is missing)' if lib else ''} "
                     "(e.g. the cu12x wheel matching `nvidia-smi`), or use the engine's official container image"),
                 Fix("Make sure the matching CUDA libraries come first", "pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu121")]
    # the flash models missing because torch saw no GPU: the missing GPU explains this, not the reverse
    no_gpu = le.only_flash_models_missing(found) and bool(log.events("gpu_not_visible"))
    # only warnings the engine went on after (TGI's "Unable to use Flash Attention V2": it falls back to the non-flash
    # model classes) while something else then failed: that failure is the first to fix, this one a warning beside it
    went_on = not any(e.fatal for e in found) and bool(log.other_failures())
    return Outcome([Finding("load.cuda_mismatch", "the CUDA driver/runtime/kernels do not match this GPU or each other", evidence, fixes,
                            severity="warn" if went_on else "",
                            explains=[*([] if no_gpu else ["load.gpu_not_visible"]), "load.nccl_failed",  # NCCL's CUDA calls fail with it
                                      *(["load.dtype_unsupported"] if floor else []),
                                      # a model module that imports the extension fails with it, and the engine's registry then
                                      # finds no class for the architecture: vLLM registry.py (v0.6.x) logs the ImportError
                                      # ("Error in loading model architecture") and raises "Model architectures [...] are not
                                      # supported for now"; SGLang models/registry.py logs "Ignore import error when loading"
                                      *(["load.engine_outdated"] if so else []), *le.CLIENT_SYMPTOMS])])


def _package(path: str) -> str:
    """The Python distribution an extension's path belongs to (site-packages/vllm/_C.abi3.so -> vllm;
    dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so -> flash_attn), or ""."""
    m = re.search(r"(?:site|dist)-packages/(?P<top>[^/]+)", path)
    if not m:
        return ""
    top = m.group("top")
    if top.endswith(".so"):
        top = re.sub(r"(?:_\d+)?_cuda.*$|\.cpython.*$|\.abi3.*$", "", top)
    return top.replace("_", "-") if top in ("flash_attn",) else top
