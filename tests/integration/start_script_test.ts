// The README's start command (scripts/start.sh, i.e. `deno task start`): SIGTERM to it stops the
// server gracefully, and a first start with an empty Deno cache fetches only the packages the
// server imports (deno.server.lock), not the test-only ones (SDK, browser driver).
import { dirname, join } from "node:path";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { SERVER_DENO_FLAGS, SERVER_ENV } from "../../src/memory/server_env.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const TEST_ONLY = ["@aws-sdk", "@smithy", "puppeteer-core"];

/** Package names in a Deno cache's npm folder (one folder per registry host). */
async function cachedPackages(denoDir: string): Promise<string[]> {
  const names: string[] = [];
  const npm = join(denoDir, "npm");
  for await (const host of Deno.readDir(npm)) {
    if (!host.isDirectory) continue;
    for await (const entry of Deno.readDir(join(npm, host.name))) names.push(entry.name);
  }
  return names.sort();
}

Deno.test("start script: first start fetches only server packages; SIGTERM stops it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "store-start-" });
  const denoDir = join(dir, "deno-cache");
  const child = new Deno.Command("bash", {
    args: [join(ROOT, "scripts/start.sh")],
    cwd: dir,
    env: {
      // The rest of the environment (proxy and certificate settings of the machine) is kept.
      PATH: `${dirname(Deno.execPath())}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
      DENO_DIR: denoDir,
      NO_COLOR: "1",
      STORE_ADDRESS: "127.0.0.1",
      STORE_PORT: "0",
      STORE_DATA_DIR: join(dir, "data"),
      STORE_DISK_RESERVE: "0",
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const reading = (async () => {
    for await (const chunk of child.stderr) stderr += new TextDecoder().decode(chunk);
  })();
  try {
    const deadline = Date.now() + 180_000;
    while (!stderr.includes('"Listening"')) {
      assert(Date.now() < deadline, `not listening after 3 minutes:\n${stderr}`);
      const done = await Promise.race([
        child.status.then(() => true),
        new Promise((r) => setTimeout(() => r(false), 200)),
      ]);
      assert(!done, `exited before listening:\n${stderr}`);
    }
    const port = Number(/"url":"http:\/\/[^:]+:(\d+)"/.exec(stderr)![1]);
    const res = await fetch(`http://127.0.0.1:${port}/`);
    await res.body?.cancel();
    assert(res.status === 403, `anonymous ListBuckets: ${res.status}`);
    // The script execs Deno: the server is this process, with the environment the benchmark
    // and the tests start it with.
    const environ = (await Deno.readTextFile(`/proc/${child.pid}/environ`)).split("\0");
    for (const [name, value] of Object.entries(SERVER_ENV)) {
      assert(environ.includes(`${name}=${value}`), `${name}=${value} in the server's environment`);
    }
    const args = (await Deno.readTextFile(`/proc/${child.pid}/cmdline`)).split("\0");
    for (const flag of SERVER_DENO_FLAGS) assert(args.includes(flag), `${flag} in ${args}`);

    child.kill("SIGTERM");
    const status = await child.status;
    await reading;
    assertEquals(status.code, 0, stderr);
    assertMatch(stderr, /"message":"Shutting down","signal":"SIGTERM"/);
    assertMatch(stderr, /"message":"Stopped"/);

    const packages = await cachedPackages(denoDir);
    assert(packages.includes("fast-xml-parser"), `server packages fetched: ${packages}`);
    for (const name of TEST_ONLY) {
      assert(!packages.includes(name), `${name} fetched by the first start: ${packages}`);
    }
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    await child.status;
    await reading.catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});
