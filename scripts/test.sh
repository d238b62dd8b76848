#!/usr/bin/env bash
# Runs every test. On a fresh machine it first installs what the tests need.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure_tools.sh
deno task test "$@"
