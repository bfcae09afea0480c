#!/usr/bin/env bash
# Install what the tests need, then run the whole suite: lint, format check, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --test
.venv/bin/ruff check device tests scripts
.venv/bin/ruff format --check device tests scripts
exec .venv/bin/python -m pytest "$@"
