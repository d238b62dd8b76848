// Oversized request bodies: every reader stops at its limit as the body streams in, so a 1 GiB
// body is refused at once and the server's memory barely moves.
import { assert, assertEquals } from "./assert.ts";
import { connect, send, statusOf } from "./raw_conn.ts";
import { ADMIN_PASSWORD, ADMIN_USER, memoryOf, type TestServer, withServer } from "./server.ts";
import { objectPath, signedFetch, signRequest } from "./signer.ts";

const GiB = 1024 * 1024 * 1024;
const PIECE = new Uint8Array(256 * 1024).fill(0x20);

interface Flood {
  status?: number;
  text: string;
  sent: number;
  ms: number;
}

/**
 * Sends `head`, then up to 1 GiB of body (generated, never held) until the server answers or
 * closes. With `chunked`, the body is framed in chunks and its size is not declared.
 */
async function flood(server: TestServer, head: string, chunked: boolean): Promise<Flood> {
  const conn = await connect(server.port);
  const started = performance.now();
  let text = "";
  let answered = false;
  const reading = (async () => {
    const buf = new Uint8Array(16 * 1024);
    try {
      while (true) {
        const n = await conn.read(buf);
        if (n === null) break;
        text += new TextDecoder().decode(buf.subarray(0, n));
        answered = true;
      }
    } catch { /* reset */ }
    answered = true;
  })();
  let sent = 0;
  const framing = chunked ? "transfer-encoding: chunked\r\n" : `content-length: ${GiB}\r\n`;
  try {
    await send(conn, head + framing + "\r\n");
    const frame = new TextEncoder().encode(`${PIECE.byteLength.toString(16)}\r\n`);
    while (!answered && sent < GiB && performance.now() - started < 20_000) {
      if (chunked) await send(conn, frame);
      await send(conn, PIECE);
      if (chunked) await send(conn, "\r\n");
      sent += PIECE.byteLength;
    }
  } catch { /* the server closed the connection */ }
  await Promise.race([reading, new Promise((r) => setTimeout(r, 2000))]);
  try {
    conn.close();
  } catch { /* closed */ }
  return { status: statusOf(text), text, sent, ms: performance.now() - started };
}

function host(server: TestServer): string {
  return `host: 127.0.0.1:${server.port}\r\n`;
}

async function assertRefusedFast(server: TestServer, label: string, f: Flood, status: number) {
  assertEquals(f.status, status, `${label}: ${f.text.slice(0, 300)}`);
  assert(f.ms < 5000, `${label}: answered after ${f.ms} ms`);
  assert(f.sent < 256 * 1024 * 1024, `${label}: the server read ${f.sent} bytes`);
  const { rss } = await memoryOf(server.pid);
  assert(rss < 400 * 1024 * 1024, `${label}: server RSS ${rss}`);
}

Deno.test("a 1 GiB body to the unauthenticated token endpoint is refused at once", async () => {
  await withServer(async (server) => {
    const before = await memoryOf(server.pid);
    const head = `POST /api/v1/tokens HTTP/1.1\r\n${
      host(server)
    }content-type: application/json\r\n`;
    for (const chunked of [false, true]) {
      const f = await flood(server, head, chunked);
      await assertRefusedFast(server, `tokens, chunked=${chunked}`, f, 413);
    }
    const after = await memoryOf(server.pid);
    assert(
      after.peak - before.peak < 64 * 1024 * 1024,
      `peak RSS grew from ${before.peak} to ${after.peak}`,
    );
    // The endpoint still works for a body of normal size.
    const ok = await fetch(`${server.url}/api/v1/tokens`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ access_key: ADMIN_USER, secret_key: ADMIN_PASSWORD }),
    });
    assertEquals(ok.status, 201, await ok.text());
  });
});

Deno.test("the admin JSON API and protocol XML bodies stop at their limit", async () => {
  await withServer(async (server) => {
    const before = await memoryOf(server.pid);
    const auth = "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`);
    const admin = `POST /admin/users HTTP/1.1\r\n${host(server)}authorization: ${auth}\r\n` +
      "content-type: application/json\r\n";
    await assertRefusedFast(server, "admin", await flood(server, admin, true), 413);

    const made = await signedFetch(server, { method: "PUT", path: objectPath("limits") });
    assertEquals(made.status, 200);
    const req = await signRequest(server, {
      method: "PUT",
      path: objectPath("limits"),
      query: [["versioning", ""]],
      payloadHash: "UNSIGNED-PAYLOAD",
    });
    const headers = Object.entries(req.headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
    const xml = `PUT /limits?versioning= HTTP/1.1\r\n${host(server)}${headers}`;
    for (const chunked of [false, true]) {
      const f = await flood(server, xml, chunked);
      await assertRefusedFast(server, `PutBucketVersioning, chunked=${chunked}`, f, 400);
    }
    const after = await memoryOf(server.pid);
    assert(
      after.peak - before.peak < 64 * 1024 * 1024,
      `peak RSS grew from ${before.peak} to ${after.peak}`,
    );
  });
});
