#!/usr/bin/env bash
# Install Sori into ./.venv on a fresh Debian machine (Python >= 3.11).
#   scripts/install.sh          runtime: Sori with the embedded default models
#   scripts/install.sh --test   also what the test suite needs (broker, compilers' outputs, linters)
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

extras="all"
apt_packages=(libportaudio2 libsndfile1 espeak-ng)
if [[ "${1:-}" == "--test" ]]; then
    extras="test"
    apt_packages+=(mosquitto sox)
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
say "done: .venv/bin/sori --help"
