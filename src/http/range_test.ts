import { assertEquals, assertRejectsCode } from "../../tests/integration/assert.ts";
import { checkConditions } from "./conditional.ts";
import { parseRange } from "./range.ts";

Deno.test("Range header forms", async () => {
  assertEquals(parseRange("bytes=0-9", 100), { offset: 0, length: 10 });
  assertEquals(parseRange("bytes=90-", 100), { offset: 90, length: 10 });
  assertEquals(parseRange("bytes=-10", 100), { offset: 90, length: 10 });
  assertEquals(parseRange("bytes=-1000", 100), { offset: 0, length: 100 });
  assertEquals(parseRange("bytes=50-1000", 100), { offset: 50, length: 50 });
  assertEquals(parseRange(null, 100), undefined);
  assertEquals(parseRange("bytes=5-3", 100), undefined);
  assertEquals(parseRange("bytes=0-1,5-6", 100), undefined);
  assertEquals(parseRange("items=0-1", 100), undefined);
  await assertRejectsCode(() => Promise.resolve(parseRange("bytes=100-", 100)), "InvalidRange");
  await assertRejectsCode(() => Promise.resolve(parseRange("bytes=-0", 100)), "InvalidRange");
  await assertRejectsCode(() => Promise.resolve(parseRange("bytes=0-", 0)), "InvalidRange");
});

Deno.test("conditional headers follow the protocol's precedence", async () => {
  const obj = { etag: '"abc"', lastModified: Date.UTC(2024, 0, 1, 12) };
  const before = new Date(Date.UTC(2024, 0, 1, 11)).toUTCString();
  const after = new Date(Date.UTC(2024, 0, 1, 13)).toUTCString();
  const run = (c: Parameters<typeof checkConditions>[0]) =>
    Promise.resolve().then(() => checkConditions(c, obj, { notModifiedAllowed: true }));
  await run({ ifMatch: '"abc"', ifUnmodifiedSince: before });
  await run({ ifMatch: "*" });
  await assertRejectsCode(() => run({ ifMatch: '"zzz"' }), "PreconditionFailed");
  await assertRejectsCode(() => run({ ifUnmodifiedSince: before }), "PreconditionFailed");
  await assertRejectsCode(() => run({ ifNoneMatch: '"abc"' }), "NotModified");
  await assertRejectsCode(() => run({ ifModifiedSince: after }), "NotModified");
  await run({ ifNoneMatch: '"zzz"', ifModifiedSince: after });
  await run({ ifModifiedSince: "not a date" });
  await assertRejectsCode(
    () =>
      Promise.resolve().then(() =>
        checkConditions({ ifNoneMatch: '"abc"' }, obj, { notModifiedAllowed: false })
      ),
    "PreconditionFailed",
  );
});
