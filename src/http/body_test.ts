import { assertEquals } from "../../tests/integration/assert.ts";
import { RequestBody } from "./body.ts";

/** A byte stream (as the HTTP layer gives) of `text`, in pieces of at most `piece` bytes. */
function byteStream(text: string, piece: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      const request = controller.byobRequest!;
      const view = request.view!;
      const n = Math.min(view.byteLength, piece, bytes.length - at);
      new Uint8Array(view.buffer, view.byteOffset, n).set(bytes.subarray(at, at + n));
      at += n;
      if (n === 0) {
        controller.close();
        request.respond(0);
        return;
      }
      request.respond(n);
    },
  });
}

Deno.test("an upload's reused buffer is as long as its declared body, up to 256 KiB", async () => {
  for (const [length, buffer] of [[11, 11], [300_000, 256 * 1024]]) {
    const text = "x".repeat(length);
    const body = new RequestBody(byteStream(text, 100_000), { length });
    let read = "";
    const buffers = new Set<number>();
    for await (const chunk of body.chunks({ transient: true })) {
      buffers.add(chunk.buffer.byteLength);
      read += new TextDecoder().decode(chunk);
    }
    assertEquals(read, text);
    assertEquals([...buffers], [buffer], `buffer of a ${length}-byte body`);
  }
});
