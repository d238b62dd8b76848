// Expect: 100-continue over a raw TCP connection. Authentication and the access decision are
// made from the request head; `100 Continue` goes out only when the handler starts reading the
// body (src/net/http1/), so a refused upload is answered at once, without a 100, and its body is
// never sent by a client that waits for the 100.
import { createUser } from "./access_helpers.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { type TestServer, withServer } from "./server.ts";
import { objectPath, signedFetch, signRequest } from "./signer.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Reads from the connection until `done(text)` or the timeout; returns what arrived. */
async function readUntil(
  conn: Deno.TcpConn,
  done: (text: string) => boolean,
  timeoutMs: number,
): Promise<string> {
  let text = "";
  const buf = new Uint8Array(16 * 1024);
  const deadline = Date.now() + timeoutMs;
  while (!done(text)) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const n = await Promise.race([
      conn.read(buf),
      new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), left))),
    ]);
    clearTimeout(timer);
    if (n === "timeout" || n === null) break;
    text += dec.decode(buf.subarray(0, n));
  }
  return text;
}

/** The head of a signed PUT with `Expect: 100-continue`, as raw HTTP/1.1 text. */
async function putHead(
  server: TestServer,
  opts: { key: string; body: Uint8Array; accessKey?: string; secret?: string },
): Promise<string> {
  const signed = await signRequest(server, {
    method: "PUT",
    path: objectPath("guarded", opts.key),
    body: opts.body,
    accessKey: opts.accessKey,
    secret: opts.secret,
  });
  const lines = [
    `PUT ${objectPath("guarded", opts.key)} HTTP/1.1`,
    `host: ${new URL(server.url).host}`,
    `content-length: ${opts.body.byteLength}`,
    "expect: 100-continue",
    ...Object.entries(signed.headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return lines.join("\r\n") + "\r\n\r\n";
}

/** The response after any interim `100 Continue`. */
const finalResponse = (text: string) => text.replace(/^HTTP\/1\.1 100[^\r]*\r\n\r\n/, "");
/** A whole error response (head and XML body) has arrived. */
const complete = (text: string) => finalResponse(text).includes("</Error>");

Deno.test("Expect: 100-continue", async (t) => {
  await withServer(async (server) => {
    await signedFetch(server, { method: "PUT", path: "/guarded" });
    const reader = await createUser(server, "reader", [{ bucket: "guarded", permission: "read" }]);
    const body = new Uint8Array(256 * 1024).fill(7);

    await t.step("a refused upload is answered 403 without its body", async () => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
      try {
        await conn.write(enc.encode(
          await putHead(server, {
            key: "refused",
            body,
            accessKey: reader.accessKey,
            secret: reader.secret,
          }),
        ));
        // Only the head was sent: the final answer must not wait for the body, and no 100
        // comes before it.
        const answer = await readUntil(conn, complete, 5000);
        assertMatch(answer, /^HTTP\/1\.1 403 /, answer.slice(0, 200));
        assert(answer.includes("AccessDenied"), answer);
        assertMatch(answer, /\r\nconnection: close\r\n/i, "the unsent body ends the connection");
        let timer: ReturnType<typeof setTimeout> | undefined;
        const after = await Promise.race([
          conn.read(new Uint8Array(64)),
          new Promise((r) => timer = setTimeout(() => r("still open"), 3000)),
        ]);
        clearTimeout(timer);
        assertEquals(after, null, "the server closed the connection");
      } finally {
        conn.close();
      }
      const res = await signedFetch(server, {
        method: "GET",
        path: objectPath("guarded", "refused"),
      });
      assertEquals(res.status, 404, "nothing was stored");
      await res.body?.cancel();
    });

    await t.step("a bad signature is answered 403 without its body", async () => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
      try {
        const head = await putHead(server, {
          key: "forged",
          body,
          secret: "wrong-secret-0123456789",
        });
        await conn.write(enc.encode(head));
        const answer = await readUntil(conn, complete, 5000);
        assertMatch(answer, /^HTTP\/1\.1 403 /, answer.slice(0, 200));
        assert(answer.includes("SignatureDoesNotMatch"), answer);
      } finally {
        conn.close();
      }
    });

    await t.step("an allowed upload gets 100, sends its body, then 200", async () => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
      try {
        await conn.write(enc.encode(await putHead(server, { key: "allowed", body })));
        const interim = await readUntil(conn, (s) => s.includes("\r\n\r\n"), 5000);
        assertMatch(interim, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, `interim: ${interim}`);
        await conn.write(body);
        const final = await readUntil(conn, (s) => s.includes("\r\n\r\n"), 5000);
        assertMatch(final, /^HTTP\/1\.1 200 /, `final: ${final.slice(0, 80)}`);
      } finally {
        conn.close();
      }
      const res = await signedFetch(server, {
        method: "GET",
        path: objectPath("guarded", "allowed"),
      });
      assertEquals((await res.bytes()).byteLength, body.byteLength);
    });
  });
});
