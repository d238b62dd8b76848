// How the server process is started, besides its settings: scripts/start.sh and
// scripts/store.service do the same (tests/integration/start_script_test.ts and install_test.ts
// hold them to it); the benchmark starts the server with both, the tests with the environment.
import { SERVER_V8_FLAGS } from "./gc.ts";

export const SERVER_ENV: Readonly<Record<string, string>> = {
  DENO_V8_FLAGS: SERVER_V8_FLAGS,
  // glibc malloc with at most two arenas. By default every thread that allocates may get one of
  // its own (up to 8 per core), and each keeps what was freed in it: eight 64 MiB uploads at a
  // time, which start a dozen file I/O threads, peaked ~12 MiB higher, no faster (README,
  // Memory).
  MALLOC_ARENA_MAX: "2",
};

/**
 * Flags of `deno run` besides the permissions. Without V8's code cache (compiled module code Deno
 * keeps in a SQLite file of its cache directory, mapped into the process for as long as it runs)
 * the idle server is ~4.7 MiB smaller and starts ~0.1 s slower (README, Memory).
 */
export const SERVER_DENO_FLAGS: readonly string[] = ["--no-code-cache"];
