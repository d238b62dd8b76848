import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { keptFileCount, KeptFiles } from "./kept_files.ts";

async function withFiles(count: number, body: (paths: string[]) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "store-test-kept-" });
  try {
    const paths = [];
    for (let i = 0; i < count; i++) {
      const path = `${dir}/f${i}`;
      await Deno.writeTextFile(path, `file ${i}`);
      paths.push(path);
    }
    await body(paths);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function text(file: Deno.FsFile): Promise<string> {
  file.seekSync(0, Deno.SeekMode.Start);
  const buf = new Uint8Array(64);
  return new TextDecoder().decode(buf.subarray(0, (await file.read(buf)) ?? 0));
}

Deno.test("a file given back serves the next read of its path, and one lent out is not shared", async () => {
  await withFiles(1, async ([path]) => {
    const files = new KeptFiles();
    const first = await files.open(path);
    // Lent out: a second read of the same path gets a file of its own.
    const second = await files.open(path);
    assert(first !== second);
    files.done(path, first, true);
    files.done(path, second, true); // one is kept per path: this one is closed
    assertEquals(keptFileCount(), 1);
    const again = await files.open(path);
    assert(again === first, "the kept file");
    assertEquals(await text(again), "file 0");
    assertEquals(keptFileCount(), 0);
    files.done(path, again, false); // a read that went wrong: its file is not kept
    assertEquals(keptFileCount(), 0);
    const fresh = await files.open(path);
    assert(fresh !== first, "the closed file is not lent again");
    files.done(path, fresh, true);
    files.close();
    assertEquals(keptFileCount(), 0);
  });
});

Deno.test("kept files are bounded per reader and across readers, and closed with their reader", async () => {
  await withFiles(40, async (paths) => {
    const readers = [
      new KeptFiles(),
      new KeptFiles(),
      new KeptFiles(),
      new KeptFiles(),
      new KeptFiles(),
    ];
    for (const files of readers) {
      for (const path of paths) files.done(path, await files.open(path), true);
    }
    // 16 per reader: the first four readers reach 64 together, the fifth keeps none.
    assertEquals(keptFileCount(), 64);
    // The most recently used are kept: the last path still is, the first no longer.
    const last = await readers[0].open(paths[39]);
    assertEquals(keptFileCount(), 63);
    assertEquals(await text(last), "file 39");
    readers[0].close();
    // Given back after its reader closed: closed, not kept.
    readers[0].done(paths[39], last, true);
    assertEquals(keptFileCount(), 48);
    readers[1].release();
    assertEquals(keptFileCount(), 32);
    for (const files of readers) files.close();
    // Deno's resource sanitizer fails the test if any file is still open.
    assertEquals(keptFileCount(), 0);
  });
});
