#!/usr/bin/env bash
# Install what the tests need, then run the whole suite: lint, format check, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --test
.venv/bin/ruff check device tests scripts
.venv/bin/ruff format --check device tests scripts
# One worker per core, at most 4 (each loads its own models); a test file stays on one
# worker, so its module fixtures load once, and files are handed out in collection order
# (the slow ones first: tests/conftest.py). SORI_TEST_WORKERS=0 runs in this process.
workers="${SORI_TEST_WORKERS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}"
# tests/real_ha runs apart, against a real Home Assistant: scripts/test_real_ha.sh.
exec .venv/bin/python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder --ignore=tests/real_ha "$@"
