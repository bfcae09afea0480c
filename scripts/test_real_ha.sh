#!/usr/bin/env bash
# The end-to-end tests against a real Home Assistant (tests/real_ha/), apart from the main
# suite: installs what they need, then runs them in one process. Home Assistant 2024.3.3
# goes into a cached venv outside the repository ($SORI_REAL_HA_DIR, default
# ~/.cache/sori-real-ha; minutes the first time, seconds after); HA's TTS needs ffmpeg
# (apt-get, as root or with sudo, when missing). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    bash scripts/install.sh --test
fi
if ! command -v ffmpeg >/dev/null; then
    sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
    $sudo_ apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -q --no-install-recommends ffmpeg
fi
command -v mosquitto >/dev/null || command -v /usr/sbin/mosquitto >/dev/null || {
    echo "test_real_ha.sh: mosquitto is missing; run 'bash scripts/install.sh --test'" >&2
    exit 2
}
python3 scripts/real_ha.py install
# One process (the session's HA and Sori's servers are shared by the tests); -p
# no:cacheprovider writes nothing into the tree; SORI_REAL_HA=1 lets tests/real_ha collect
# (without it the folder collects nothing, so the main suite never starts HA).
SORI_REAL_HA=1 exec .venv/bin/python -m pytest -p no:cacheprovider -q tests/real_ha "$@"
