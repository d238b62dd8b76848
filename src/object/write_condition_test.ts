// Conditional writes: the condition checks and their translation inside the commit, with the
// guard running in the same SQLite transaction as the write (two writers batched together).
import { assertEquals } from "../../tests/integration/assert.ts";
import { S3Error } from "../http/errors.ts";
import { SqliteMetaStore } from "../meta/sqlite.ts";
import type { ObjectVersion } from "../meta/store.ts";
import { checkWriteCondition, commitGuard, writeConditionOf } from "./write_condition.ts";

function version(etag: string, over: Partial<ObjectVersion> = {}): ObjectVersion {
  return {
    bucket: "b",
    key: "k",
    versionId: "null",
    deleteMarker: false,
    size: 1,
    etag,
    lastModified: 0,
    contentType: "text/plain",
    userMeta: {},
    headers: {},
    owner: "o",
    data: { kind: "inline", bytes: new Uint8Array([1]) },
    ...over,
  };
}

function code(fn: () => unknown): string {
  try {
    fn();
    return "ok";
  } catch (err) {
    return err instanceof S3Error ? err.code : String(err);
  }
}

Deno.test("write conditions: the checks", () => {
  const current = version('"abc"');
  const marker = version("", { deleteMarker: true });
  const none = { ifNoneMatch: "*" };
  assertEquals(code(() => checkWriteCondition(none, undefined, "k")), "ok");
  assertEquals(code(() => checkWriteCondition(none, marker, "k")), "ok");
  assertEquals(code(() => checkWriteCondition(none, current, "k")), "PreconditionFailed");
  const match = (ifMatch: string) => ({ ifMatch });
  assertEquals(code(() => checkWriteCondition(match('"abc"'), current, "k")), "ok");
  assertEquals(code(() => checkWriteCondition(match("abc"), current, "k")), "ok");
  assertEquals(code(() => checkWriteCondition(match('"x", "abc"'), current, "k")), "ok");
  assertEquals(code(() => checkWriteCondition(match("*"), current, "k")), "ok");
  assertEquals(code(() => checkWriteCondition(match('"x"'), current, "k")), "PreconditionFailed");
  assertEquals(code(() => checkWriteCondition(match('"abc"'), undefined, "k")), "NoSuchKey");
  assertEquals(code(() => checkWriteCondition(match('"abc"'), marker, "k")), "NoSuchKey");
  assertEquals(code(() => commitGuard(none, "k")!(current)), "ConditionalRequestConflict");
  assertEquals(commitGuard(undefined, "k"), undefined);
  assertEquals(writeConditionOf(new Headers()), undefined);
  assertEquals(
    code(() => writeConditionOf(new Headers({ "if-none-match": '"a"' }))),
    "NotImplemented",
  );
});

Deno.test("write conditions: two writers in one batch, the second sees the first", async () => {
  const meta = new SqliteMetaStore(":memory:");
  await meta.createBucket({
    name: "b",
    owner: "o",
    createdAt: 0,
    region: "r",
    versioning: "",
    objectLock: false,
  });
  const guard = commitGuard({ ifNoneMatch: "*" }, "k");
  // Both are queued before either commits: they share one transaction, in order.
  const results = await Promise.allSettled([
    meta.putObjectVersion(version('"one"'), [], guard),
    meta.putObjectVersion(version('"two"'), [], guard),
  ]);
  assertEquals(results.map((r) => r.status), ["fulfilled", "rejected"]);
  const reason = (results[1] as PromiseRejectedResult).reason;
  assertEquals(reason instanceof S3Error && reason.code, "ConditionalRequestConflict");
  assertEquals((await meta.getObjectVersion("b", "k"))?.etag, '"one"');
  await meta.close();
});
