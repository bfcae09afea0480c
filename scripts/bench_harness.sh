#!/usr/bin/env bash
# Wall time of `sori test` on the example manifest (every augmentation), one worker
# against two. Usage: scripts/bench_harness.sh [MANIFEST]   (from the repository root)
set -euo pipefail
manifest=${1:-tests/fixtures/ko-read.yaml}
out=${TMPDIR:-/tmp}/sori-bench-harness
mkdir -p "$out"
for jobs in 1 2; do
    start=$(date +%s.%N)
    python -m sori test "$manifest" --jobs "$jobs" --json "$out/jobs$jobs.json" >"$out/jobs$jobs.txt" || true
    end=$(date +%s.%N)
    printf 'jobs %d: %.1f s wall, %s\n' "$jobs" "$(echo "$end - $start" | bc)" "$(tail -1 "$out/jobs$jobs.txt")"
done
