// Request checksums: which headers and trailers count, how values are checked, and how part
// checksums combine into composite and full-object checksums.
import { createHash } from "node:crypto";
import { assertEquals, assertRejectsCode } from "../../tests/integration/assert.ts";
import {
  CHECKSUM_ALGORITHMS,
  checksumOf,
  compositeChecksum,
  fullObjectChecksum,
  requestChecksum,
  supportsType,
} from "./checksum.ts";
import { DIALECTS } from "./dialect.ts";

const d = DIALECTS.store;
const NINE = new TextEncoder().encode("123456789");

function hexToBase64(hex: string): string {
  return btoa(String.fromCharCode(...hex.match(/../g)!.map((b) => parseInt(b, 16))));
}

/** Expects `fn` to throw an error with `code` (it may throw synchronously). */
function rejects(fn: () => unknown, code: string): Promise<void> {
  return assertRejectsCode(() => Promise.resolve().then(fn), code);
}

function run(headers: Record<string, string>, data: Uint8Array, trailers?: Headers) {
  const body = trailers ? { hasTrailer: true, trailers } : undefined;
  const check = requestChecksum(new Headers(headers), d, body);
  check?.update(data);
  check?.finish();
  return check;
}

Deno.test("checksum: every algorithm's check value", () => {
  const expected: Record<string, string> = {
    CRC32: hexToBase64("cbf43926"),
    CRC32C: hexToBase64("e3069283"),
    CRC64NVME: hexToBase64("ae8b14860a799888"),
    SHA1: createHash("sha1").update(NINE).digest("base64"),
    SHA256: createHash("sha256").update(NINE).digest("base64"),
  };
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    assertEquals(checksumOf(algorithm, NINE), expected[algorithm], algorithm);
    const header = `x-store-checksum-${algorithm.toLowerCase()}`;
    const check = run({ [header]: expected[algorithm] }, NINE);
    assertEquals(check?.value, expected[algorithm]);
  }
});

Deno.test("checksum: a header that does not match is BadDigest", async () => {
  await rejects(
    () => run({ "x-store-checksum-crc64nvme": checksumOf("CRC64NVME", NINE) }, NINE.slice(1)),
    "BadDigest",
  );
});

Deno.test("checksum: malformed, doubled or contradicting headers are InvalidRequest", async () => {
  const crc = checksumOf("CRC32", NINE);
  const cases: Record<string, string>[] = [
    { "x-store-checksum-crc32": "AAAA" },
    { "x-store-checksum-crc32": "not base64!" },
    { "x-store-checksum-sha256": crc },
    { "x-store-checksum-crc32": crc, "x-store-checksum-crc32c": crc },
    { "x-store-sdk-checksum-algorithm": "CRC32" },
    { "x-store-sdk-checksum-algorithm": "CRC32C", "x-store-checksum-crc32": crc },
    { "x-store-sdk-checksum-algorithm": "MD5", "x-store-checksum-crc32": crc },
    { "x-store-trailer": "x-store-checksum-crc32" },
  ];
  for (const headers of cases) {
    await rejects(() => run(headers, NINE), "InvalidRequest");
  }
  assertEquals(run({}, NINE), undefined);
  assertEquals(
    run({ "x-store-sdk-checksum-algorithm": "crc32", "x-store-checksum-crc32": crc }, NINE)?.value,
    crc,
  );
});

Deno.test("checksum: a trailing checksum is read once the body has ended", async () => {
  const value = checksumOf("SHA1", NINE);
  const trailers = new Headers();
  const body = { hasTrailer: true, trailers };
  const check = requestChecksum(
    new Headers({ "x-store-trailer": "x-store-checksum-sha1" }),
    d,
    body,
  );
  check!.update(NINE);
  trailers.set("x-store-checksum-sha1", value);
  check!.finish();
  assertEquals(check!.value, value);
  await rejects(
    () =>
      run(
        { "x-store-trailer": "x-store-checksum-sha1" },
        NINE,
        new Headers({ "x-store-checksum-sha1": checksumOf("SHA1", NINE.slice(2)) }),
      ),
    "BadDigest",
  );
  await rejects(
    () => run({ "x-store-trailer": "x-store-checksum-sha1" }, NINE, new Headers()),
    "IncompleteBody",
  );
  await rejects(
    () => run({ "x-store-trailer": "x-store-checksum-md5" }, NINE, new Headers()),
    "InvalidRequest",
  );
  await rejects(
    () =>
      run(
        { "x-store-trailer": "x-store-checksum-crc32", "x-store-checksum-crc32": "AAAAAA==" },
        NINE,
        new Headers(),
      ),
    "InvalidRequest",
  );
});

Deno.test("checksum: composite and full-object checksums of parts", () => {
  const parts = [new Uint8Array(1000).fill(1), new Uint8Array(10).fill(2), NINE];
  const whole = new Uint8Array(1019);
  parts.reduce((at, p) => (whole.set(p, at), at + p.byteLength), 0);
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    const values = parts.map((p) => checksumOf(algorithm, p));
    const raw = new Uint8Array(values.flatMap((v) => [...atob(v)].map((c) => c.charCodeAt(0))));
    if (supportsType(algorithm, "COMPOSITE")) {
      assertEquals(compositeChecksum(algorithm, values), `${checksumOf(algorithm, raw)}-3`);
    }
    if (supportsType(algorithm, "FULL_OBJECT")) {
      const full = fullObjectChecksum(
        algorithm,
        values.map((value, i) => ({ value, size: parts[i].byteLength })),
      );
      assertEquals(full, checksumOf(algorithm, whole), algorithm);
    }
  }
  assertEquals(supportsType("CRC64NVME", "COMPOSITE"), false);
  assertEquals(supportsType("SHA256", "FULL_OBJECT"), false);
  assertEquals(supportsType("CRC32C", "FULL_OBJECT"), true);
});
