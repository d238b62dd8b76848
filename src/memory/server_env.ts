// The environment the server process starts with, besides its settings: scripts/start.sh and
// scripts/store.service set the same (tests/integration/start_script_test.ts and install_test.ts
// hold them to it); the benchmark and the tests start the server with it.
import { SERVER_V8_FLAGS } from "./gc.ts";

export const SERVER_ENV: Readonly<Record<string, string>> = {
  DENO_V8_FLAGS: SERVER_V8_FLAGS,
  // glibc malloc with at most two arenas. By default every thread that allocates may get one of
  // its own (up to 8 per core), and each keeps what was freed in it: eight 64 MiB uploads at a
  // time, which start a dozen file I/O threads, peaked 10-15 MiB higher, no faster (README, Memory).
  MALLOC_ARENA_MAX: "2",
};
