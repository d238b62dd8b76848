// scripts/install.sh staged below a temp directory (DESTDIR, no root needed): the program, its
// Deno, the system user, the unit and the settings template land where the unit expects them;
// the unit passes `systemd-analyze verify` with its hardening in place; the installed program
// starts and stops on SIGTERM; a second run (an upgrade) keeps the settings.
import { join } from "node:path";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { SERVER_DENO_FLAGS, SERVER_ENV } from "../../src/memory/server_env.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const decoder = new TextDecoder();

async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

async function install(destdir: string) {
  const r = await run("bash", [
    join(ROOT, "scripts/install.sh"),
    "--deno",
    Deno.execPath(),
    "--no-fetch",
  ], {
    DESTDIR: destdir,
  });
  assertEquals(r.code, 0, `install.sh: ${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

Deno.test("install.sh into a staging root; the unit verifies; the installed program runs", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "store-install-" });
  const app = join(root, "opt/store");
  try {
    await install(root);

    await t.step("files, user and settings template", async () => {
      for (const f of ["main.ts", "deno.json", "deno.server.lock", "README.md", "src/config.ts"]) {
        assert((await Deno.stat(join(app, f))).isFile, f);
      }
      assert(((await Deno.stat(join(app, "bin/deno"))).mode! & 0o111) !== 0, "deno executable");
      const tests: string[] = [];
      const walk = async (dir: string) => {
        for await (const e of Deno.readDir(dir)) {
          if (e.isDirectory) await walk(join(dir, e.name));
          else if (e.name.endsWith("_test.ts")) tests.push(e.name);
        }
      };
      await walk(join(app, "src"));
      assertEquals(tests, [], "tests are not installed");
      assertMatch(
        await Deno.readTextFile(join(root, "etc/passwd")),
        /^store:x:\d+:\d+:.*:\/var\/lib\/store:/m,
      );
      const env = join(root, "etc/store/store.env");
      assertEquals((await Deno.stat(env)).mode! & 0o777, 0o640);
      assertMatch(await Deno.readTextFile(env), /^STORE_PORT=9000$/m);
    });

    await t.step("the unit: hardening and systemd-analyze verify", async () => {
      const unit = await Deno.readTextFile(join(root, "etc/systemd/system/store.service"));
      for (
        const line of [
          "User=store",
          "EnvironmentFile=/etc/store/store.env",
          "ProtectSystem=strict",
          "ReadWritePaths=/var/lib/store",
          "NoNewPrivileges=yes",
          "PrivateTmp=yes",
          "LimitNOFILE=65536",
          "Restart=on-failure",
          "RestartPreventExitStatus=2",
          "KillSignal=SIGTERM",
          // The environment the benchmark and the tests start the server with.
          ...Object.entries(SERVER_ENV).map(([name, value]) => `Environment=${name}=${value}`),
        ]
      ) assert(unit.split("\n").includes(line), `${line} in the unit`);
      const execStart = /^ExecStart=(.*)$/m.exec(unit)![1].split(" ");
      for (const flag of SERVER_DENO_FLAGS) {
        assert(execStart.includes(flag), `${flag} in ExecStart`);
      }
      // The unit names /opt/store; verified here with the staged copy in its place.
      const staged = join(root, "store.service");
      await Deno.writeTextFile(
        staged,
        unit.replaceAll("/opt/store", app).replaceAll("/etc/store/", join(root, "etc/store/")),
      );
      const r = await run("systemd-analyze", ["verify", staged]);
      assertEquals(r.code, 0, `systemd-analyze verify: ${r.stdout}\n${r.stderr}`);
      assertEquals(r.stderr.trim(), "", "no warnings");
    });

    await t.step("the installed program starts, and stops on SIGTERM", async () => {
      const data = join(root, "var/lib/store");
      const unit = await Deno.readTextFile(join(root, "etc/systemd/system/store.service"));
      const execStart = /^ExecStart=(.*)$/m.exec(unit)![1].replaceAll("/opt/store", app).split(" ");
      const child = new Deno.Command(execStart[0], {
        args: execStart.slice(1),
        cwd: app,
        env: {
          STORE_ADDRESS: "127.0.0.1",
          STORE_PORT: "0",
          STORE_DATA_DIR: data,
          STORE_DISK_RESERVE: "0",
        },
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).spawn();
      let stderr = "";
      const reading = (async () => {
        for await (const c of child.stderr) stderr += decoder.decode(c);
      })();
      try {
        const deadline = Date.now() + 60_000;
        while (!stderr.includes('"Listening"')) {
          assert(Date.now() < deadline, `not listening:\n${stderr}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        child.kill("SIGTERM");
        assertEquals((await child.status).code, 0, stderr);
        await reading;
        assertMatch(stderr, /"message":"Stopped"/);
      } finally {
        try {
          child.kill("SIGKILL");
        } catch { /* exited */ }
        await child.status;
      }
    });

    await t.step("an upgrade keeps the settings", async () => {
      const env = join(root, "etc/store/store.env");
      await Deno.writeTextFile(env, "STORE_PORT=9443\n");
      assertMatch(await install(root), /Keeping the existing/);
      assertEquals(await Deno.readTextFile(env), "STORE_PORT=9443\n");
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
