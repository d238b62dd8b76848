// Connections that do not behave: slow headers, idle keep-alive, uploads that stop, and more
// clients than descriptors. The server times them out, refuses what it cannot hold, stays up.
import { assert, assertEquals } from "./assert.ts";
import { connect, readUntilClosed, send, statusOf } from "./raw_conn.ts";
import { startServer, withServer } from "./server.ts";
import { objectPath, signedFetch, signRequest } from "./signer.ts";

const FAST = { STORE_HEADER_TIMEOUT: "1", STORE_IDLE_TIMEOUT: "2", STORE_BODY_TIMEOUT: "1" };

Deno.test("a client that never finishes its headers is closed after STORE_HEADER_TIMEOUT", async () => {
  await withServer(async (server) => {
    const conn = await connect(server.port);
    await send(conn, "GET / HTTP/1.1\r\nHost: x\r\n");
    const drip = setInterval(() => send(conn, "X-Slow: 1\r\n").catch(() => {}), 200);
    const { closedAfterMs } = await readUntilClosed(conn, 6000);
    clearInterval(drip);
    assert(closedAfterMs !== undefined, "the slow client was never disconnected");
    assert(closedAfterMs > 800 && closedAfterMs < 3000, `closed after ${closedAfterMs} ms`);
  }, { env: FAST });
});

Deno.test("an idle keep-alive connection is closed after STORE_IDLE_TIMEOUT", async () => {
  await withServer(async (server) => {
    const conn = await connect(server.port);
    await send(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    const started = performance.now();
    const { text, closedAfterMs } = await readUntilClosed(conn, 8000);
    assertEquals(statusOf(text), 403, `anonymous ListBuckets: ${text.slice(0, 200)}`);
    assert(closedAfterMs !== undefined, "the idle connection was never closed");
    const idle = performance.now() - started;
    assert(idle > 1500 && idle < 4500, `closed ${idle} ms after the request`);
  }, { env: FAST });
});

Deno.test("an upload that stops sending gets RequestTimeout and stores nothing", async () => {
  await withServer(async (server) => {
    const bucket = await signedFetch(server, { method: "PUT", path: objectPath("stall") });
    assertEquals(bucket.status, 200);
    const path = objectPath("stall", "half");
    const req = await signRequest(server, {
      method: "PUT",
      path,
      payloadHash: "UNSIGNED-PAYLOAD",
      headers: { "content-length": String(1024 * 1024) },
    });
    const conn = await connect(server.port);
    const head = Object.entries(req.headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
    await send(conn, `PUT ${path} HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\n${head}\r\n`);
    await send(conn, new Uint8Array(1024));
    const { text, closedAfterMs } = await readUntilClosed(conn, 8000);
    assertEquals(statusOf(text), 400, `answer to a stalled upload: ${text.slice(0, 300)}`);
    assert(text.includes("<Code>RequestTimeout</Code>"), text);
    assert(closedAfterMs !== undefined && closedAfterMs < 5000, `closed after ${closedAfterMs}`);
    const after = await signedFetch(server, { method: "HEAD", path });
    assertEquals(after.status, 404, "the stalled upload left an object");
  }, { env: FAST });
});

/** Opens a connection that sends headers slowly, forever; null when the connect failed. */
async function slowClient(port: number): Promise<Deno.TcpConn | null> {
  try {
    const conn = await connect(port);
    await send(conn, "GET / HTTP/1.1\r\nHost: x\r\n");
    return conn;
  } catch {
    return null;
  }
}

Deno.test({
  name:
    "2,000 slow clients under a 1,024 descriptor limit: others are answered, the server stays up",
  fn: async () => {
    const server = await startServer({
      prefix: ["prlimit", "--nofile=1024:1024", "--"],
      env: { STORE_HEADER_TIMEOUT: "3" },
    });
    const conns: Deno.TcpConn[] = [];
    try {
      assert(server.logs().includes('"maxConnections":512'), server.logs());
      const opened = await Promise.all(Array.from({ length: 2000 }, () => slowClient(server.port)));
      for (const c of opened) if (c) conns.push(c);
      const drip = setInterval(() => {
        for (const c of conns) send(c, "X-Slow: 1\r\n").catch(() => {});
      }, 500);
      // Slow clients give way: a well-behaved one is served at once, again and again.
      for (let i = 0; i < 5; i++) {
        const res = await signedFetch(server, { method: "GET", path: "/" });
        assertEquals(res.status, 200, await res.text());
        const fds = [...Deno.readDirSync(`/proc/${server.pid}/fd`)].length;
        assert(fds < 1024, `${fds} descriptors open`);
      }
      clearInterval(drip);
      const ends = await Promise.all(conns.map((c) => readUntilClosed(c, 6000)));
      const open = ends.filter((r) => r.closedAfterMs === undefined).length;
      assertEquals(open, 0, "slow clients still connected after the header timeout");
      const after = await signedFetch(server, { method: "GET", path: "/" });
      assertEquals(after.status, 200, await after.text());
      assert(!/Too many open files|Uncaught/.test(server.logs()), server.logs().slice(-2000));
    } finally {
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await server.stop();
      await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test("when every connection is busy with a request, a new one gets a 503", async () => {
  await withServer(async (server) => {
    const bucket = await signedFetch(server, { method: "PUT", path: objectPath("busy") });
    assertEquals(bucket.status, 200);
    // Two uploads that send slowly keep both allowed connections busy.
    const uploads: Deno.TcpConn[] = [];
    for (const key of ["a", "b"]) {
      const path = objectPath("busy", key);
      const req = await signRequest(server, {
        method: "PUT",
        path,
        payloadHash: "UNSIGNED-PAYLOAD",
        headers: { "content-length": "100" },
      });
      const conn = await connect(server.port);
      const head = Object.entries(req.headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
      await send(conn, `PUT ${path} HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\n${head}\r\n`);
      uploads.push(conn);
    }
    await new Promise((r) => setTimeout(r, 300));
    const third = await connect(server.port);
    const { text } = await readUntilClosed(third, 3000);
    assertEquals(statusOf(text), 503, text);
    for (const c of uploads) c.close();
  }, { env: { STORE_MAX_CONNECTIONS: "2", STORE_BODY_TIMEOUT: "5" } });
});
