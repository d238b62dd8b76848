// Start-up failures: each is one line on stderr naming the cause and the setting, exit code 2,
// no stack trace. Each case spawns the real server.
import { join } from "node:path";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER } from "./server.ts";
import { makeTestCa } from "./tls_certs.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

async function failedStart(
  env: Record<string, string>,
  flags: string[] = ["-A"],
): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, MAIN],
    env: {
      STORE_ADDRESS: "127.0.0.1",
      STORE_PORT: "0",
      STORE_ADMIN_USER: ADMIN_USER,
      STORE_ADMIN_PASSWORD: ADMIN_PASSWORD,
      STORE_DISK_RESERVE: "0",
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assertEquals(out.code, 2, `exit code for ${JSON.stringify(env)}: ${stderr}`);
  assert(!/^\s+at /m.test(stderr), `a stack trace: ${stderr}`);
  // Log lines are JSON; the explanation is the one line that is not.
  const plain = stderr.split("\n").filter((l) => l !== "" && !l.startsWith("{"));
  assertEquals(plain.length, 1, `one explanation line: ${stderr}`);
  return plain[0];
}

Deno.test("start-up failures are one line naming the cause and the setting, exit code 2", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "store-startup-" });
  const file = join(dir, "file");
  await Deno.writeTextFile(file, "not a directory");
  const data = join(dir, "data");
  const base = { STORE_DATA_DIR: data };
  // Something already listening on a port.
  const busy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  // A port nothing listens on: PostgreSQL refused.
  const gone = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const nobody = `postgres://store@127.0.0.1:${(gone.addr as Deno.NetAddr).port}/store`;
  gone.close();
  try {
    const cases: [string, Record<string, string>, RegExp][] = [
      [
        "port in use",
        { ...base, STORE_PORT: String((busy.addr as Deno.NetAddr).port) },
        /^Start-up error: STORE_PORT: port \d+ on 127\.0\.0\.1 is already in use/,
      ],
      [
        "address that does not resolve",
        { ...base, STORE_ADDRESS: "no-such-host.invalid" },
        /^Start-up error: STORE_ADDRESS: no-such-host\.invalid does not resolve/,
      ],
      [
        "address not on this machine",
        { ...base, STORE_ADDRESS: "192.0.2.1" },
        /^Start-up error: STORE_ADDRESS: 192\.0\.2\.1 is not an address of this machine/,
      ],
      [
        "data directory is a file",
        { STORE_DATA_DIR: file },
        /^Start-up error: STORE_DATA_DIR: .*\/file exists and is not a directory$/,
      ],
      [
        "data directory below a file",
        { STORE_DATA_DIR: join(file, "data") },
        /^Start-up error: STORE_DATA_DIR: cannot use .*: a part of the path is a file$/,
      ],
      [
        // sysfs refuses new files even to root.
        "data directory not writable",
        { STORE_DATA_DIR: "/sys/kernel" },
        /^Start-up error: STORE_DATA_DIR: \/sys\/kernel is not writable by user \d+: /,
      ],
      [
        "drive directory is a file",
        { ...base, STORE_DATA_DIRS: `${join(dir, "d0")},${file}` },
        /^Start-up error: STORE_DATA_DIRS: .*\/file exists and is not a directory$/,
      ],
      [
        "empty region",
        { ...base, STORE_REGION: "" },
        /^Configuration error: STORE_REGION is set but empty/,
      ],
      [
        "erasure layout wider than the drives",
        { ...base, STORE_DATA_DIRS: `${join(dir, "d0")},${join(dir, "d1")}`, STORE_EC: "2+1" },
        /^Configuration error: STORE_EC 2\+1 is wider than the 2 drives in STORE_DATA_DIRS/,
      ],
      [
        "PostgreSQL metadata that cannot be reached",
        { ...base, STORE_META_URL: nobody },
        /^Start-up error: STORE_META_URL: the PostgreSQL metadata database cannot be opened: .*ECONNREFUSED/,
      ],
      [
        "metadata snapshots with PostgreSQL metadata",
        { ...base, STORE_META_URL: nobody, STORE_BACKUP_DIR: join(dir, "backups") },
        /^Configuration error: STORE_BACKUP_DIR snapshots the SQLite metadata; with STORE_META_URL/,
      ],
      [
        "missing certificate file",
        { ...base, STORE_TLS_CERT: join(dir, "none.pem"), STORE_TLS_KEY: file },
        /^Start-up error: STORE_TLS_CERT: cannot read .*none\.pem: it does not exist$/,
      ],
      [
        "certificate file that is not PEM",
        { ...base, STORE_TLS_CERT: file, STORE_TLS_KEY: file },
        /^Start-up error: STORE_TLS_CERT\/STORE_TLS_KEY: .* are not a usable PEM certificate/,
      ],
    ];
    for (const [name, env, pattern] of cases) {
      await t.step(name, async () => assertMatch(await failedStart(env), pattern));
    }
    await t.step("certificate and key that do not match", async () => {
      const ca = await makeTestCa();
      try {
        const a = await ca.issue("a");
        const b = await ca.issue("b");
        assertMatch(
          await failedStart({ ...base, STORE_TLS_CERT: a.certFile, STORE_TLS_KEY: b.keyFile }),
          /^Start-up error: STORE_TLS_CERT\/STORE_TLS_KEY: .*KeyMismatch/,
        );
      } finally {
        await Deno.remove(ca.dir, { recursive: true });
      }
    });
    await t.step("a data directory the process may not use (Deno permissions)", async () => {
      assertMatch(
        await failedStart({ STORE_DATA_DIR: join(dir, "elsewhere") }, [
          "--allow-net",
          "--allow-env",
          "--allow-sys",
          "--allow-read",
          `--allow-write=${join(dir, "allowed")}`,
        ]),
        /^Start-up error: STORE_DATA_DIR: cannot create .*elsewhere: this process may not use it/,
      );
    });
  } finally {
    busy.close();
    await Deno.remove(dir, { recursive: true });
  }
});
