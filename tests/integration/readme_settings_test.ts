// Every STORE_* variable the server reads has a row in the README's configuration table.
import { assertEquals } from "./assert.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function sources(dir: string, out: string[] = []): Promise<string[]> {
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory && e.name !== "testdata") await sources(path, out);
    else if (e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) out.push(path);
  }
  return out;
}

Deno.test("every STORE_* variable in the code is in the README's configuration table", async () => {
  const names = new Set<string>();
  for (const file of [`${ROOT}main.ts`, ...await sources(`${ROOT}src`)]) {
    for (const m of (await Deno.readTextFile(file)).matchAll(/STORE_[A-Z][A-Z0-9_]*/g)) {
      // `STORE_NOTIFY_` is the prefix of the per-target variables (one table row covers them).
      if (!m[0].endsWith("_")) names.add(m[0]);
    }
  }
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  const rows = new Set([...readme.matchAll(/^\| `(STORE_[A-Z0-9_<>]+)`/gm)].map((m) => m[1]));
  const missing = [...names].filter((n) => !rows.has(n)).sort();
  assertEquals(missing, [], "variables without a row in the README's configuration table");
  assertEquals(rows.has("STORE_NOTIFY_<KIND>_<ID>_<SETTING>"), true);
});
