#!/usr/bin/env bash
# Starts the server in the foreground (the README's start command; `deno task start` runs it),
# with Deno installed into .tools/ first when it is missing.
# - Only the packages the server imports are fetched (deno.server.lock; `deno task lock:server`
#   regenerates it after deno.json's imports change). `deno task` itself would first fetch every
#   package of deno.json, the test-only ones too.
# - The shell replaces itself with Deno (exec), so SIGTERM and SIGINT reach the server, which
#   stops gracefully. (`npx deno task start` does not pass SIGTERM on: the server would run on.)
set -euo pipefail
cd "$(dirname "$0")/.."
# A young generation of at most 4 MiB per half: ~30 MiB less resident memory after load, no slower;
# and V8's gc() for the memory release (README, Memory; src/memory/gc.ts SERVER_V8_FLAGS). A
# DENO_V8_FLAGS of the caller's replaces them.
export DENO_V8_FLAGS="${DENO_V8_FLAGS:---max-semi-space-size=4,--expose-gc}"
# glibc malloc with at most two arenas (src/memory/server_env.ts): less memory kept after large
# uploads.
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
source scripts/ensure_deno.sh >&2
# --no-code-cache: the compiled-code cache would stay mapped while the server runs (~4.7 MiB).
exec deno run --no-code-cache --lock=deno.server.lock --frozen --allow-net --allow-read \
  --allow-write --allow-ffi --allow-env --allow-sys main.ts
