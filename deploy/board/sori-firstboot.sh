#!/bin/sh
# First boot of a Raspberry Pi OS or JetPack image that carries a Sori bundle (made with
# `sori bundle --board pi5 -o sori-pi5.tar`): installs it offline into /opt/sori/.venv,
# /var/lib/sori/models and /etc/sori/sori.toml, then starts the service. Run once by
# sori-firstboot.service; the pi-gen stage beside this file puts both into an image.
#   sori-firstboot.sh [BUNDLE]   default: the first sori-*.tar in /boot/firmware or /opt/sori
# SORI_SYSTEM_SITE=1 makes the venv see the system's packages (JetPack's CUDA builds).
set -eu
bundle=${1:-$(ls /boot/firmware/sori-*.tar /opt/sori/sori-*.tar 2>/dev/null | head -n 1 || true)}
if [ -z "$bundle" ] || [ ! -f "$bundle" ]; then
    echo "sori-firstboot: no sori-*.tar in /boot/firmware or /opt/sori; copy one there" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Check the wheels against the bundle's SHA256SUMS before running anything from them;
# `sori bundle install` then checks every member against manifest.json.
tar -xf "$bundle" -C "$work" SHA256SUMS manifest.json wheels
(cd "$work" && sha256sum --quiet --strict --ignore-missing -c SHA256SUMS)
id sori >/dev/null 2>&1 || useradd --system --home-dir /var/lib/sori --shell /usr/sbin/nologin \
    --groups audio sori
mkdir -p /opt/sori /etc/sori /var/lib/sori/models
[ -x /opt/sori/.venv/bin/python ] || python3 -m venv ${SORI_SYSTEM_SITE:+--system-site-packages} /opt/sori/.venv
/opt/sori/.venv/bin/python -m pip install -q --no-index --no-deps "$work"/wheels/*.whl
/opt/sori/.venv/bin/sori bundle install "$bundle" --venv /opt/sori/.venv --system \
    --config /etc/sori/sori.toml
chown -R sori:sori /var/lib/sori
unit=$(/opt/sori/.venv/bin/python -c "from sori.core.shipped import shipped_path; print(shipped_path('sori.service'))")
install -m 644 "$unit" /etc/systemd/system/sori.service
systemctl daemon-reload
systemctl enable --now sori.service
touch /var/lib/sori/.bundle-installed
