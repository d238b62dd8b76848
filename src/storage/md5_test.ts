import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { createHash } from "node:crypto";
import { createMd5, md5IsNative } from "./md5.ts";

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("MD5: the same digests as node:crypto, from libcrypto where the system has it", () => {
  // Linux with FFI permission (as the server runs) and OpenSSL installed: the native path.
  if (Deno.build.os === "linux") assert(md5IsNative(), "libcrypto's MD5 is used");
  const shared = new Uint8Array(new SharedArrayBuffer(3 * 1024 * 1024 + 7));
  for (let at = 0; at < shared.length; at += 65536) {
    crypto.getRandomValues(shared.subarray(at, Math.min(at + 65536, shared.length)));
  }
  const plain = shared.slice();
  for (const size of [0, 1, 55, 56, 64, 1000, 65536, shared.length]) {
    // Pieces at odd offsets of shared and ordinary memory, as chunk buffers and batches are.
    const md5 = createMd5();
    for (let at = 0; at < size; at += 333_333) {
      const end = Math.min(size, at + 333_333);
      md5.update(at % 2 ? plain.subarray(at, end) : shared.subarray(at, end));
    }
    const expected = createHash("md5").update(plain.subarray(0, size)).digest("hex");
    assertEquals(hex(md5.digest()), expected, `${size} bytes`);
  }
  assertEquals(
    hex(createMd5().update(new TextEncoder().encode("abc")).digest()),
    "900150983cd24fb0d6963f7d28e17f72",
  );
});
