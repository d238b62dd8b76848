// sslmode in STORE_META_URL reaches the connection: against a real PostgreSQL serving TLS with a
// certificate from a test CA, `require` encrypts, `disable` does not, and `verify-full` refuses a
// certificate no trusted CA signed and accepts it once the CA is trusted.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { makeTestCa } from "../../../tests/integration/tls_certs.ts";
import { createPostgres } from "../../../tests/services/postgres.ts";
import { openPool } from "./connect.ts";

const CONFIG = new URL("../../../deno.json", import.meta.url).pathname;

Deno.test("STORE_META_URL sslmode: require, disable, verify-full", async (t) => {
  const ca = await makeTestCa();
  const pg = await createPostgres({ tls: await ca.issue("127.0.0.1") });
  await pg.start();
  const encrypted = async (mode: string) => {
    const sql = openPool(`${pg.url}?sslmode=${mode}`, 1);
    try {
      const [row] = await sql`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`;
      return row.ssl as boolean;
    } finally {
      await sql.end({ timeout: 1 });
    }
  };
  try {
    await t.step("require: the connection is encrypted", async () => {
      assertEquals(await encrypted("require"), true);
    });
    await t.step("disable: it is not", async () => {
      assertEquals(await encrypted("disable"), false);
    });
    await t.step("verify-full: a certificate of an unknown CA is refused", async () => {
      let failure = "";
      await encrypted("verify-full").catch((err) => failure = String(err));
      assert(failure.includes("unable to verify"), failure);
    });
    await t.step("verify-full: accepted once the CA is trusted (DENO_CERT)", async () => {
      const script = `${ca.dir}/check.ts`;
      await Deno.writeTextFile(
        script,
        `import { openPool } from "${new URL("./connect.ts", import.meta.url).href}";\n` +
          `const sql = openPool(Deno.args[0], 1);\n` +
          "const [row] = await sql`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`;\n" +
          "console.log(row.ssl);\nawait sql.end();\n",
      );
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--config", CONFIG, script, `${pg.url}?sslmode=verify-full`],
        env: { DENO_CERT: ca.caFile },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout).trim();
      assertEquals(text, "true", new TextDecoder().decode(out.stderr));
    });
  } finally {
    await pg.dispose();
    await Deno.remove(ca.dir, { recursive: true });
  }
});
