#!/usr/bin/env bash
# The Raspberry Pi path, run for real on an x86-64 Debian host: an arm64 Debian bookworm
# root under qemu-user emulation, where scripts/install.sh runs as a Pi user would (user
# pi, passwordless sudo, a clone in ~/sori), then `sori demo`, `sori intent` and
# `sori replay --no-wake` on a spoken clip it makes with espeak-ng.
#
#   sudo scripts/check_arm64.sh [--cpu CPU] [--with-llm] [--bundle] [--cache DIR] [--rebuild]
#   scripts/check_arm64.sh --json-from RESULTS   (the summary of a recorded run; no root)
#
#   --cpu CPU         the core qemu-user emulates (QEMU_CPU): cortex-a76, a Pi 5's (the
#                     default; an RK3588's big cores too), or cortex-a72, a Pi 4's; a wheel
#                     that assumes a newer instruction faults there as on the board
#   --with-llm        also build llama-cpp-python from source in the root (install.sh
#                     without --no-llm): build-essential and cmake; an estimated hour or
#                     more under emulation (4 minutes natively here, 10 to 20 on a Pi 5)
#   --bundle          also `sori bundle --board pi5 --no-models` here, installed in the root
#                     with no network (deploy/board/sori-firstboot.sh, pip --no-index), then
#                     `sori doctor --json` there
#   --cache DIR       where the arm64 root lives (default ~/.cache/sori-arm64; it prints it)
#   --rebuild         build the base root again (debootstrap, about 5 minutes)
#   --json-from FILE  print the JSON line for a results file a run wrote, and exit as it did
#
# The base root (debootstrap minbase, python3, sudo, ca-certificates, user pi: what
# Raspberry Pi OS Lite starts with) is built once; every run installs into a fresh copy of
# it. The checkout goes in as `git ls-files` (tracked and untracked files, ignored ones
# such as .venv left out). Progress goes to stderr, logs to the cache's logs/; stdout is
# one JSON line:
#   {"arch": "aarch64", "python": "3.11.2", "install_s": ..., "demo_ok": true,
#    "intent": "HassTurnOff", "replay_ok": true, "replay_text": "...", "notes": [...]}
# Every time in it is the wall time under qemu-user on this host ("emulated": true), many
# times a board's, never a board figure. Exit 0 when demo, intent and replay all work (and
# the bundle, with --bundle); 1 when one fails; 2 when the check could not run.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
SUITE=bookworm
MIRROR=${SORI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CLIP_TEXT="에어컨 꺼줘"
CLIP_INTENT=HassTurnOff
INTENT_TEXT="거실 불 꺼 줘"

say() { printf '[check-arm64] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

# The JSON line for a results file (one "key<TAB>value" per line; a key given twice is a
# list), and the exit status: 0 when demo, intent and replay worked (and the bundle when
# one was checked), else 1.
summarize() {
    python3 - "$1" "$CLIP_INTENT" <<'PY'
import json
import sys

path, wanted = sys.argv[1], sys.argv[2]
lists = {"notes"}
numbers = {"install_s", "demo_s", "replay_s", "bundle_pack_s", "bundle_install_s", "total_s"}
flags = {"demo_ok", "replay_ok", "bundle_ok", "llm", "emulated"}
result = {"arch": None, "python": None, "install_s": None, "demo_ok": False, "intent": None,
          "replay_ok": False, "replay_text": None, "notes": []}
with open(path, encoding="utf-8") as lines:
    for line in lines:
        key, sep, value = line.rstrip("\n").partition("\t")
        if not sep:
            continue
        if key in lists:
            result.setdefault(key, []).append(value)
        elif key in numbers:
            result[key] = round(float(value), 1)
        elif key in flags:
            result[key] = value == "true"
        else:
            result[key] = value
ok = result["demo_ok"] and result["intent"] == wanted and result["replay_ok"]
if "bundle_ok" in result:
    ok = ok and result["bundle_ok"]
print(json.dumps(result, ensure_ascii=False))
sys.exit(0 if ok else 1)
PY
}

cpu=cortex-a76 with_llm=0 bundle=0 rebuild=0 json_from="" cache=${SORI_ARM64_CACHE:-${HOME:-/root}/.cache/sori-arm64}
while (($#)); do
    case $1 in
        --cpu) [[ $# -ge 2 ]] || die "--cpu needs a CPU name (cortex-a76, cortex-a72)"; cpu=$2; shift ;;
        --with-llm) with_llm=1 ;;
        --bundle) bundle=1 ;;
        --rebuild) rebuild=1 ;;
        --cache) [[ $# -ge 2 ]] || die "--cache needs a folder"; cache=$2; shift ;;
        --json-from) [[ $# -ge 2 ]] || die "--json-from needs a results file"; json_from=$2; shift ;;
        -h | --help) usage; exit 0 ;;
        *) say "unknown option $1"; usage >&2; exit 2 ;;
    esac
    shift
done

if [[ -n $json_from ]]; then
    [[ -f $json_from ]] || die "no results file $json_from"
    summarize "$json_from"
    exit
fi

# ---- the host: root, qemu-user with binfmt_misc, debootstrap --------------------------
[[ $(uname -m) == x86_64 ]] || die "this emulates arm64 on an x86-64 host; this is $(uname -m)"
[[ $(id -u) -eq 0 ]] || die "run as root (sudo $0): it runs debootstrap, mounts /proc in the root and chroots"
command -v python3 >/dev/null || die "python3 is needed on the host for the summary"
git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1 || die "$REPO is not a git checkout (the copy into the root is git ls-files)"
if ! command -v qemu-aarch64-static >/dev/null || ! command -v debootstrap >/dev/null \
    || ! command -v update-binfmts >/dev/null; then
    say "apt-get install qemu-user-static binfmt-support debootstrap (the host)"
    apt-get update -qq || die "apt-get update failed on the host"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static binfmt-support \
        debootstrap >&2 || die "could not install qemu-user-static binfmt-support debootstrap"
fi
# "Available CPUs:", then one a line; qemu exits 1 after listing them
cpus=$(qemu-aarch64-static -cpu help | tail -n +2 || true)
grep -qxF "  $cpu" <<<"$cpus" || die "qemu-aarch64-static knows no CPU $cpu; it lists:$(tr -s ' \n' ' ' <<<"$cpus")"
binfmt=/proc/sys/fs/binfmt_misc
if [[ ! -e $binfmt/register ]]; then
    mount -t binfmt_misc binfmt_misc "$binfmt" || die "cannot mount binfmt_misc at $binfmt (a container without it cannot run arm64 binaries)"
fi
[[ -e $binfmt/qemu-aarch64 ]] || update-binfmts --enable qemu-aarch64 >&2 || true
[[ -e $binfmt/qemu-aarch64 ]] || die "no qemu-aarch64 binfmt handler: update-binfmts --enable qemu-aarch64 failed"
# sudo inside the root needs its setuid bit honoured, which qemu-user does only when the
# handler is registered with the C (credentials) flag; Debian registers it without.
if ! grep -q '^flags: .*C' "$binfmt/qemu-aarch64"; then
    say "registering qemu-aarch64 with binfmt's C flag (sudo in the root needs its setuid bit)"
    spec=/usr/share/binfmts/qemu-aarch64
    [[ -f $spec ]] || die "no $spec to re-register qemu-aarch64 from"
    magic=$(sed -n 's/^magic //p' "$spec") mask=$(sed -n 's/^mask //p' "$spec")
    interpreter=$(sed -n 's/^interpreter //p' "$spec")
    echo -1 >"$binfmt/qemu-aarch64"
    printf '%s' ":qemu-aarch64:M:0:$magic:$mask:$interpreter:POCF" >"$binfmt/register" \
        || die "re-registering qemu-aarch64 failed; update-binfmts --enable qemu-aarch64 restores Debian's"
fi

mkdir -p "$cache/logs"
cache=$(cd "$cache" && pwd)
base=$cache/$SUITE
run=$cache/run
logs=$cache/logs
results=$logs/results.tsv
say "arm64 root: $base (a fresh copy per run in $run; logs in $logs)"
: >"$results"
record() { printf '%s\t%s\n' "$1" "$2" >>"$results"; }
started=$SECONDS

# Unmount everything below a root, deepest first (never rm -rf a root with /dev bound in).
unmount_below() {
    local mounts
    mounts=$(findmnt -rn -o TARGET | grep -F "$1/" | sort -r || true)
    [[ -z $mounts ]] || while IFS= read -r m; do umount -l "$m" || true; done <<<"$mounts"
    if findmnt -rn -o TARGET | grep -qF "$1/"; then
        die "could not unmount everything below $1; unmount by hand before running again"
    fi
}

# /proc and /dev in a root, its DNS and hosts, and the host's CA bundle for pip (this host
# reaches PyPI through a proxy whose CA the Debian bundle lacks; a Pi needs none). No /sys:
# the host's x86 /sys beside the host's /proc/cpuinfo (qemu-user shows it unchanged) makes
# onnxruntime's cpuinfo crash (SIGSEGV at import); without /sys it warns and goes on. On a
# board both describe its own CPU.
prepare_mounts() {
    local root=$1
    mount -t proc proc "$root/proc"
    mount --bind /dev "$root/dev"
    mount --bind /dev/pts "$root/dev/pts"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    grep -q "$(hostname)" "$root/etc/hosts" 2>/dev/null || echo "127.0.1.1 $(hostname)" >>"$root/etc/hosts"
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/host-ca-bundle.crt"
}

if ((rebuild)) || [[ ! -f $base/.sori-base-ready ]]; then
    partial=$base.partial
    unmount_below "$partial"
    rm -rf "$partial"
    base_started=$SECONDS
    say "debootstrap --arch=arm64 --variant=minbase $SUITE (once; about 2 to 5 minutes)"
    debootstrap --arch=arm64 --variant=minbase "$SUITE" "$partial" "$MIRROR" >"$logs/debootstrap.log" 2>&1 \
        || die "debootstrap failed; see $logs/debootstrap.log"
    trap 'unmount_below "$partial"' EXIT
    prepare_mounts "$partial"
    say "installing python3, sudo, ca-certificates and user pi in the base root (about 2 minutes)"
    chroot "$partial" /bin/bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 sudo ca-certificates' \
        >"$logs/base.log" 2>&1 || die "setting up the base root failed; see $logs/base.log"
    # Raspberry Pi OS's first user has passwordless sudo.
    chroot "$partial" useradd -m -s /bin/bash -G sudo pi
    echo 'pi ALL=(ALL) NOPASSWD: ALL' >"$partial/etc/sudoers.d/010_pi-nopasswd"
    chmod 440 "$partial/etc/sudoers.d/010_pi-nopasswd"
    chroot "$partial" apt-get clean
    unmount_below "$partial"
    trap - EXIT
    unmount_below "$base"
    rm -rf "$base"
    mv "$partial" "$base"
    date -u +%FT%TZ >"$base/.sori-base-ready"
    say "base root ready in $((SECONDS - base_started)) s"
fi

# ---- a fresh copy of the base root, with the checkout in ~pi/sori ----------------------
unmount_below "$run"
rm -rf "$run"
cp -a "$base" "$run"
trap 'unmount_below "$run"' EXIT
prepare_mounts "$run"
say "copying the checkout $REPO (git ls-files) into $run/home/pi/sori"
mkdir -p "$run/home/pi/sori"
# Tracked and untracked files that git does not ignore; a tracked file deleted in the
# working tree is left out.
git -C "$REPO" ls-files -z --cached --others --exclude-standard \
    | (cd "$REPO" && while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done) \
    | tar -C "$REPO" --null -T - -cf - | tar -xf - -C "$run/home/pi/sori"
chroot "$run" chown -R pi:pi /home/pi/sori

# A command as user pi in ~/sori, with a login's plain environment (no host variables);
# QEMU_CPU reaches every arm64 program it starts (qemu-user reads it at each exec).
as_pi() {
    chroot --userspec=pi:pi "$run" /usr/bin/env -i HOME=/home/pi USER=pi LOGNAME=pi \
        PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 PIP_CERT=/etc/host-ca-bundle.crt \
        PIP_DEFAULT_TIMEOUT=180 QEMU_CPU="$cpu" /bin/bash -c "cd ~/sori && $1"
}

record arch "$(chroot "$run" uname -m)"
record python "$(chroot "$run" python3 -c 'import platform; print(platform.python_version())')"
record emulated true
record qemu_cpu "$cpu"
record notes "emulated: qemu-user $(qemu-aarch64-static --version | sed -n '1s/.*version \([^ ]*\).*/\1/p') as a $cpu on an x86-64 host ($(nproc) cores); every *_s is wall time under emulation, not a board figure"

# ---- scripts/install.sh, as the Pi user runs it ----------------------------------------
install_args="--no-llm"
((with_llm)) && install_args=""
record llm "$( ((with_llm)) && echo true || echo false)"
say "bash scripts/install.sh $install_args (emulated: 10 to 30 minutes; log $logs/install.log)"
t=$SECONDS
set +e
as_pi "bash scripts/install.sh $install_args" 2>&1 | tee "$logs/install.log" \
    | grep --line-buffered '^\[install\]' >&2
install_rc=${PIPESTATUS[0]}
set -e
record install_s $((SECONDS - t))
if ! as_pi ".venv/bin/sori --help" >/dev/null 2>&1; then
    record notes "install.sh failed (exit $install_rc); see $logs/install.log"
    record total_s $((SECONDS - started))
    summarize "$results"
    exit 1
fi
if ! ((with_llm)); then
    if as_pi ".venv/bin/python -c 'import llama_cpp'" 2>/dev/null; then
        record notes "llama_cpp is importable although install.sh ran with --no-llm"
    else
        record notes "no llama-cpp-python (install.sh --no-llm): demo, intent and replay ran without it; the local model tier is unavailable. --with-llm builds it (build-essential, cmake; an estimated 10 to 20 minutes on a Pi 5, an hour or more emulated)"
    fi
fi
packages=$(as_pi ".venv/bin/python -m pip list --format=freeze" 2>/dev/null | wc -l)
if chroot "$run" sh -c 'command -v cc || command -v gcc' >/dev/null; then
    record notes "$packages Python distributions installed; a C compiler is in the root"
else
    record notes "$packages Python distributions installed with no C compiler in the root: every native one came from a wheel"
fi

# ---- sori demo, intent, replay -------------------------------------------------------
say "sori demo"
t=$SECONDS
if as_pi ".venv/bin/sori demo" >"$logs/demo.log" 2>&1 \
    && grep -qF $'거실 불 켜줘\tHassTurnOn' "$logs/demo.log"; then
    record demo_ok true
else
    record demo_ok false
    record notes "sori demo failed; see $logs/demo.log"
fi
record demo_s $((SECONDS - t))

say "sori intent \"$INTENT_TEXT\""
as_pi ".venv/bin/sori intent --json '$INTENT_TEXT'" >"$logs/intent.log" 2>"$logs/intent.err" || true
record intent "$(python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["intent"])' <"$logs/intent.log" 2>/dev/null || echo none)"

say "espeak-ng \"$CLIP_TEXT\", padded with 0.5 s and 1.0 s of silence; sori replay --no-wake"
# espeak-ng came with install.sh; the padding gives the VAD silence before and after.
as_pi "espeak-ng -v ko+f3 -s 160 -w /tmp/clip-raw.wav '$CLIP_TEXT' && .venv/bin/python -c '
import wave
with wave.open(\"/tmp/clip-raw.wav\") as w:
    rate, width, pcm = w.getframerate(), w.getsampwidth(), w.readframes(w.getnframes())
with wave.open(\"/home/pi/clip.wav\", \"wb\") as out:
    out.setnchannels(1); out.setsampwidth(width); out.setframerate(rate)
    out.writeframes(bytes(int(0.5 * rate) * width) + pcm + bytes(int(1.0 * rate) * width))
'" >"$logs/clip.log" 2>&1 || record notes "making the clip failed; see $logs/clip.log"
t=$SECONDS
as_pi ".venv/bin/sori replay --no-wake --json /home/pi/clip.wav" >"$logs/replay.log" 2>"$logs/replay.err" || true
record replay_s $((SECONDS - t))
python3 - "$logs/replay.log" "$CLIP_INTENT" >>"$results" <<'PY'
import json
import sys

lines = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.startswith("{")]
heard = [line for line in lines if line.get("intent") == sys.argv[2]]
print(f"replay_ok\t{'true' if heard else 'false'}")
print(f"replay_text\t{(heard or lines or [{}])[0].get('transcript', '')}")
PY
grep -q '^replay_ok	true' "$results" || record notes "replay heard no $CLIP_INTENT; see $logs/replay.log and replay.err"

# ---- the offline bundle ----------------------------------------------------------------
if ((bundle)); then
    tar_file=$cache/sori-pi5.tar
    # This checkout's sori (its wheel is built from here) on a host Python with sori's
    # dependencies: the checkout's venv, or SORI_HOST_PYTHON (a clone without one).
    host_python=${SORI_HOST_PYTHON:-$REPO/.venv/bin/python}
    [[ -x $host_python ]] || die "--bundle packs with $host_python; run scripts/install.sh here first, or set SORI_HOST_PYTHON"
    say "sori bundle --board pi5 --no-models --python-version 3.11 (here, with network; about 2 minutes)"
    t=$SECONDS
    if PYTHONPATH=$REPO/device "$host_python" -m sori bundle --board pi5 --no-models --python-version 3.11 -o "$tar_file" --json \
        >"$logs/bundle-pack.json" 2>"$logs/bundle-pack.log"; then
        record bundle_pack_s $((SECONDS - t))
        cp "$tar_file" "$run/home/pi/sori-pi5.tar"
        # The first-boot script as a fresh image runs it, with no network at all (a new
        # network namespace holds only a down loopback) and no systemd (a stub records the
        # calls it would make).
        printf '#!/bin/sh\necho "systemctl $*" >>/var/log/systemctl-stub.log\n' >"$run/usr/local/sbin/systemctl"
        chmod 755 "$run/usr/local/sbin/systemctl"
        mkdir -p "$run/etc/systemd/system"  # where the script installs sori.service
        say "sori-firstboot.sh with no network: sori bundle install (pip --no-index) into /opt/sori/.venv"
        t=$SECONDS
        if unshare --net chroot "$run" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            LANG=C.UTF-8 QEMU_CPU="$cpu" /bin/sh /home/pi/sori/deploy/board/sori-firstboot.sh /home/pi/sori-pi5.tar \
            >"$logs/bundle-install.log" 2>&1; then
            record bundle_install_s $((SECONDS - t))
            unshare --net chroot "$run" /usr/bin/env -i HOME=/var/lib/sori PATH=/usr/bin:/bin LANG=C.UTF-8 QEMU_CPU="$cpu" \
                /opt/sori/.venv/bin/sori doctor --json --no-self-test --config /etc/sori/sori.toml \
                >"$logs/doctor.json" 2>"$logs/doctor.err" || true
            python3 - "$logs/doctor.json" >>"$results" <<'PY'
import json
import re
import sys

checks = {c["name"]: c for c in map(json.loads, open(sys.argv[1], encoding="utf-8"))}
detail = checks.get("config", {}).get("detail", "")
found = re.search(r"board profile (\S+)", detail)  # the profile applied
chosen = found.group(1) if found else None
if found:
    print(f"bundle_board\t{chosen}")
    print(f"notes\tsori doctor --json in the root: {detail!r} (qemu-user shows the host's "
          "cpuinfo, so what it detects is not the board)")
print(f"bundle_ok\t{'true' if chosen == 'pi5' else 'false'}")
PY
        else
            record bundle_ok false
            record notes "the bundle did not install offline; see $logs/bundle-install.log"
        fi
    else
        record bundle_ok false
        record notes "sori bundle failed; see $logs/bundle-pack.log"
    fi
fi

record total_s $((SECONDS - started))
summarize "$results"
