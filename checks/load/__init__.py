"""load-layer checks.

How a load failure is told from its neighbours, from the codes' definitions (shared/codes.md); each rule
is tested in tests/test_load_neighbours.py.

- load.cuda_mismatch: the binary does not fit the driver or the GPU. "no kernel image", "driver version
  is insufficient", `sm_XX is not compatible`, an undefined symbol in a compiled extension, libcudart /
  libcublas .so not found, ptxas or NVRTC without this GPU's arch, and a GPU "architecture" below what the
  build's kernels were compiled for. Cured by another build or driver, never by newer model support.
- load.engine_outdated: the engine or transformers does not know the model or an option of a newer config:
  `Model architectures [...] not supported`, a KeyError on a model_type, "does not recognize this
  architecture", llama.cpp's "unknown model architecture", an unexpected keyword from a newer config.
  Cured by upgrading.
- load.model_files: the files are missing, corrupt, unreadable or not the model: config.json / safetensors /
  tokenizer / GGUF magic, "Repo id must be", a 404 on a file, HeaderTooLarge, a truncated checkpoint, a
  Git LFS pointer, tensor shapes the config does not build. Cured by the files.
- load.dtype_unsupported: the dtype has no kernels here: bfloat16/FP8 below its compute capability, a kernel
  library built without the dtype, flash-attn's fp16/bf16-only kernels. Cured by --dtype.
- load.quantization_unsupported: the checkpoint's quantization method, its kernels or its GPU floor.
- load.gpu_not_visible: no GPU is seen at all (CUDA not available, a CPU kernel asked for float16), where
  cuda_mismatch sees one that the binary does not fit.

Ties, when the words alone would fit two codes:
1. "architecture" said in a GPU kernel's context (a kernel source path, an SM number, a compute capability)
   is the GPU's: cuda_mismatch; said of a model it is engine_outdated (doctor.logparse.chains OWNERS).
2. llama.cpp's "unknown model architecture" for a name outside its master list (doctor/data/architectures.jsonl)
   is model_files only when the log's build is not newer than that list: a newer build that does not know
   the name is outdated (checks.load.model_files). A file that is not GGUF at all is model_files.
3. A GPU below every kernel of the build comes before the bfloat16 refusal beside it; a compute capability
   refused for a dtype the line names is the dtype's.
4. When two causes fire on one log, the one first in the chain wins (doctor.logparse.chains): a wrapper
   ("failed to be inspected", "Failed to import ... because of the following error") yields to the error it
   points at, and a symptom whose reason another line logs yields to that reason (TGI's "requires Flash
   Attention enabled models" after "Could not import Flash Attention enabled models: CUDA is not available"
   is gpu_not_visible first).
"""
