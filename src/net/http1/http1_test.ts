// The HTTP/1.1 server over raw sockets: framing, strictness, keep-alive, Expect: 100-continue.
import { serveConnections } from "../listener.ts";

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}
function assertEquals<T>(actual: T, expected: T, message = ""): void {
  if (actual !== expected) {
    throw new Error(
      `${message} expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`,
    );
  }
}

const enc = new TextEncoder();
/** The listener's write-stall time in these tests. */
const STALL_MS = 1500;

/** What the handler saw of each request, for the assertions. */
interface Seen {
  url: string;
  method: string;
  headers: [string, string][];
  body: string | null;
}

async function withHttp1(
  fn: (port: number, seen: Seen[]) => Promise<void>,
): Promise<void> {
  const seen: Seen[] = [];
  const server = serveConnections({
    hostname: "127.0.0.1",
    port: 0,
    limits: { headerTimeoutMs: 5000, idleTimeoutMs: 5000, maxConnections: 100, stallMs: STALL_MS },
    onError: () => new Response("handler failed", { status: 500 }),
    warn: () => {},
  }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/refuse") return new Response("no", { status: 403 });
    if (url.pathname === "/ignore-body") return new Response("ignored");
    if (url.pathname === "/204") {
      return new Response(null, { status: 204, headers: { "content-length": "0" } });
    }
    if (url.pathname === "/fail-first") {
      return new Response(new ReadableStream({ pull: (c) => c.error(new Error("disk gone")) }));
    }
    if (url.pathname === "/big") {
      const piece = new Uint8Array(1024 * 1024);
      let left = 64;
      return new Response(
        new ReadableStream({ pull: (c) => left-- > 0 ? c.enqueue(piece) : c.close() }),
        { headers: { "content-length": String(64 * 1024 * 1024) } },
      );
    }
    if (url.pathname === "/byob" && req.body) {
      // Read as uploads read: into one small buffer of the reader's own, reused.
      const reader = req.body.getReader({ mode: "byob" });
      let buffer = new ArrayBuffer(4);
      let text = "";
      let largest = 0;
      for (;;) {
        const { done, value } = await reader.read(new Uint8Array(buffer));
        if (value) {
          buffer = value.buffer as ArrayBuffer;
          text += new TextDecoder().decode(value);
          largest = Math.max(largest, value.byteLength);
        }
        if (done) break;
      }
      return new Response(`byob=${text};largest=${largest}`);
    }
    const entry: Seen = {
      url: req.url,
      method: req.method,
      headers: [...req.headers],
      body: req.body ? await req.text() : null,
    };
    seen.push(entry);
    if (url.pathname === "/stream") {
      let n = 0;
      return new Response(
        new ReadableStream({
          async pull(c) {
            await new Promise((r) => setTimeout(r, 20));
            if (n++ < 3) c.enqueue(enc.encode(`part${n};`));
            else c.close();
          },
        }),
      );
    }
    if (url.pathname === "/latin1") {
      return new Response("ok", { headers: { "x-out": "caf\u00e9" } });
    }
    return new Response(`body=${entry.body ?? ""}`, { headers: { "x-method": req.method } });
  });
  try {
    await fn(server.addr.port, seen);
  } finally {
    await server.shutdown();
  }
}

/** Sends `bytes`, reads until the connection closes or `done(text)`; latin-1 text. */
async function exchange(
  port: number,
  bytes: Uint8Array | string,
  done: (text: string) => boolean = () => false,
): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(typeof bytes === "string" ? enc.encode(bytes) : bytes);
    return await readText(conn, done);
  } finally {
    conn.close();
  }
}

async function readText(
  conn: Deno.Conn,
  done: (text: string) => boolean,
  timeoutMs = 5000,
): Promise<string> {
  let text = "";
  const buf = new Uint8Array(64 * 1024);
  const deadline = Date.now() + timeoutMs;
  while (!done(text) && Date.now() < deadline) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const n = await Promise.race([
      conn.read(buf),
      new Promise<"timeout">((r) => timer = setTimeout(() => r("timeout"), 300)),
    ]);
    clearTimeout(timer);
    if (n === null) break;
    if (n === "timeout") continue;
    text += String.fromCharCode(...buf.subarray(0, n));
  }
  return text;
}

const responses = (text: string) => text.split(/(?=HTTP\/1\.1 \d{3} )/).filter((s) => s !== "");

Deno.test("HTTP/1.1 server", async (t) => {
  await withHttp1(async (port, seen) => {
    await t.step("the URL keeps the target as sent (dot segments, encoded slashes)", async () => {
      const text = await exchange(
        port,
        "GET /b/a/../c%2Fd/./e?x=1&y HTTP/1.1\r\nhost: h.example:9\r\nconnection: close\r\n\r\n",
      );
      assert(text.startsWith("HTTP/1.1 200 OK\r\n"), text);
      assertEquals(seen.at(-1)!.url, "http://h.example:9/b/a/../c%2Fd/./e?x=1&y");
    });

    await t.step("small responses carry Content-Length and Date", async () => {
      const text = await exchange(port, "GET /x HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n");
      assert(/\r\ncontent-length: 5\r\n/.test(text), text);
      assert(/\r\ndate: \w{3}, \d\d \w{3} \d{4} /.test(text), text);
      assert(text.endsWith("\r\n\r\nbody="), text);
    });

    await t.step("a response still being produced goes out chunked, as it comes", async () => {
      const text = await exchange(
        port,
        "GET /stream HTTP/1.1\r\nhost: a\r\n\r\n",
        (s) => s.endsWith("0\r\n\r\n"),
      );
      assert(/\r\ntransfer-encoding: chunked\r\n/.test(text), text);
      assert(text.endsWith("6\r\npart1;\r\n6\r\npart2;\r\n6\r\npart3;\r\n0\r\n\r\n"), text);
    });

    await t.step("HEAD sends the head only", async () => {
      const text = await exchange(port, "HEAD /x HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n");
      assert(text.startsWith("HTTP/1.1 200 OK\r\n") && text.endsWith("\r\n\r\n"), text);
    });

    await t.step("keep-alive: pipelined requests are answered in order", async () => {
      const text = await exchange(
        port,
        "PUT /1 HTTP/1.1\r\nhost: a\r\ncontent-length: 3\r\n\r\nabc" +
          "GET /2 HTTP/1.1\r\nhost: a\r\n\r\n" +
          "PUT /3 HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n" +
          "2\r\nxy\r\n3;ext=1\r\nz12\r\n0\r\ntrailer-field: 1\r\n\r\n" +
          "DELETE /4 HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n",
      );
      const parts = responses(text);
      assertEquals(parts.length, 4, text);
      assert(parts[0].endsWith("body=abc"), parts[0]);
      assert(parts[1].endsWith("body="), parts[1]);
      assert(parts[2].endsWith("body=xyz12"), parts[2]);
      assert(/x-method: DELETE/.test(parts[3]), parts[3]);
    });

    await t.step("a reader with its own buffer gets the body read into it", async () => {
      const text = await exchange(
        port,
        "PUT /byob HTTP/1.1\r\nhost: a\r\ncontent-length: 11\r\n\r\nhello world" +
          "PUT /byob HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n" +
          "6\r\nchunke\r\n2\r\nd!\r\n0\r\n\r\n" +
          "PUT /byob HTTP/1.1\r\nhost: a\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
      );
      const parts = responses(text);
      assertEquals(parts.length, 3, text);
      assert(parts[0].endsWith("byob=hello world;largest=4"), parts[0]);
      assert(parts[1].endsWith("byob=chunked!;largest=4"), parts[1]);
      // No body at all: the handler sees none (as for any Content-Length: 0).
      assert(parts[2].endsWith("body="), parts[2]);
    });

    await t.step("an unread small body is dropped and the connection goes on", async () => {
      const text = await exchange(
        port,
        "PUT /ignore-body HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\n\r\nhello" +
          "GET /after HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n",
      );
      const parts = responses(text);
      assertEquals(parts.length, 2, text);
      assert(parts[1].endsWith("body="), parts[1]);
      assertEquals(seen.at(-1)!.url, "http://a/after");
    });

    await t.step("a long head (40 KiB of fields) is read whole", async () => {
      const fields = Array.from({ length: 40 }, (_, i) => `x-f${i}: ${"v".repeat(1000)}\r\n`);
      const text = await exchange(
        port,
        `GET /long HTTP/1.1\r\nhost: a\r\n${fields.join("")}connection: close\r\n\r\n`,
      );
      assert(text.startsWith("HTTP/1.1 200 OK\r\n"), text.slice(0, 200));
      assertEquals(seen.at(-1)!.headers.filter(([k]) => k.startsWith("x-f")).length, 40);
    });

    await t.step("HTTP/1.0 closes after the response", async () => {
      const text = await exchange(port, "GET /old HTTP/1.0\r\n\r\n");
      assert(text.startsWith("HTTP/1.1 200 OK\r\n"), text);
      assert(/\r\nconnection: close\r\n/.test(text), text);
    });

    await t.step("field values are octets both ways", async () => {
      const head = enc.encode("GET /latin1 HTTP/1.1\r\nhost: a\r\nx-in: caf");
      const bytes = new Uint8Array([...head, 0xe9, ...enc.encode("\r\nconnection: close\r\n\r\n")]);
      const text = await exchange(port, bytes);
      assert(text.includes("\r\nx-out: caf\u00e9\r\n"), text);
      const xin = seen.at(-1)!.headers.find(([k]) => k === "x-in");
      assertEquals(xin?.[1], "caf\u00e9");
    });

    await t.step("malformed heads are refused and close the connection", async () => {
      const cases: [string, string][] = [
        [
          "GET / HTTP/1.1\r\nhost: a\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n",
          "400",
        ],
        ["PUT / HTTP/1.1\r\nhost: a\r\ncontent-length: 3\r\ncontent-length: 4\r\n\r\nabcd", "400"],
        ["PUT / HTTP/1.1\r\nhost: a\r\ncontent-length: -1\r\n\r\n", "400"],
        ["GET / HTTP/1.1\r\nhost: a\r\nx-a : b\r\n\r\n", "400"],
        ["GET / HTTP/1.1\r\nhost: a\r\nx-a: b\r\n c\r\n\r\n", "400"],
        ["GET / HTTP/1.1\r\n\r\n", "400"],
        ["GET / HTTP/1.1\r\nhost: a\r\nhost: b\r\n\r\n", "400"],
        ["GET /a b HTTP/1.1\r\nhost: a\r\n\r\n", "400"],
        ["GET / HTTP/2.0\r\nhost: a\r\n\r\n", "505"],
        ["PUT / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: gzip\r\n\r\n", "501"],
        ["PUT / HTTP/1.1\r\nhost: a\r\ncontent-length: 1\r\nexpect: 200-ok\r\n\r\nx", "417"],
        [`GET / HTTP/1.1\r\nhost: a\r\nx-big: ${"a".repeat(70_000)}\r\n\r\n`, "431"],
      ];
      for (const [request, status] of cases) {
        const before = seen.length;
        const text = await exchange(port, request);
        assert(
          text.startsWith(`HTTP/1.1 ${status} `),
          `${JSON.stringify(request.slice(0, 80))}: ${text}`,
        );
        assert(/\r\nconnection: close\r\n/.test(text), text);
        assertEquals(seen.length, before, "the handler never ran");
      }
    });

    await t.step(
      "a malformed chunked body is answered 400, whatever the handler made of it",
      async () => {
        const bodies = [
          "zz\r\nabc\r\n0\r\n\r\n", // not hex
          "3 \r\nabc\r\n0\r\n\r\n", // whitespace after the size
          "3;\u0001\r\nabc\r\n0\r\n\r\n", // a control character in an extension
          "3\r\nabc\r\n0\r\nx y: 1\r\n\r\n", // a trailer name that is not a token
        ];
        for (const chunked of bodies) {
          const text = await exchange(
            port,
            `PUT /bad HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n${chunked}`,
          );
          assert(text.startsWith("HTTP/1.1 400 "), `${JSON.stringify(chunked)}: ${text}`);
          assert(/\r\nconnection: close\r\n/.test(text), text);
        }
      },
    );

    await t.step(
      "a 64 KiB run of spaces inside a field value is parsed in linear time",
      async () => {
        const started = performance.now();
        const text = await exchange(
          port,
          `GET /spaces HTTP/1.1\r\nhost: a\r\nx: a${
            " ".repeat(60_000)
          }b\r\nconnection: close\r\n\r\n`,
        );
        assert(text.startsWith("HTTP/1.1 200 OK\r\n"), text.slice(0, 100));
        const ms = performance.now() - started;
        assert(ms < 1000, `took ${ms} ms`);
        assertEquals(seen.at(-1)!.headers.find(([k]) => k === "x")?.[1].length, 60_002);
      },
    );

    await t.step("methods are case-sensitive: `head` is not HEAD", async () => {
      for (const method of ["head", "get", "Put", "delete"]) {
        const text = await exchange(port, `${method} /x HTTP/1.1\r\nhost: a\r\n\r\n`);
        assert(text.startsWith("HTTP/1.1 501 "), `${method}: ${text}`);
      }
    });

    await t.step("only origin-form and http(s) absolute-form targets are served", async () => {
      for (const target of ["a:b//admin/users", "file:///x", "url:80", "*"]) {
        const text = await exchange(port, `GET ${target} HTTP/1.1\r\nhost: a\r\n\r\n`);
        assert(text.startsWith("HTTP/1.1 400 "), `${target}: ${text}`);
      }
      const text = await exchange(
        port,
        "GET http://other.example?x=1 HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n",
      );
      assert(text.startsWith("HTTP/1.1 200 "), text);
      assertEquals(seen.at(-1)!.url, "http://other.example/?x=1");
      const bad = new Uint8Array([
        ...enc.encode("GET /x"),
        0xff,
        0xfe,
        ...enc.encode(" HTTP/1.1\r\nhost: a\r\n\r\n"),
      ]);
      assert(
        (await exchange(port, bad)).startsWith("HTTP/1.1 400 "),
        "invalid UTF-8 in the target",
      );
    });

    await t.step("HTTP/1.0: no chunked coding, keep-alive acknowledged", async () => {
      const text = await exchange(port, "GET /stream HTTP/1.0\r\n\r\n");
      assert(!/transfer-encoding/i.test(text), text);
      assert(/\r\nconnection: close\r\n/.test(text), text);
      assert(text.endsWith("\r\n\r\npart1;part2;part3;"), text);
      const kept = await exchange(
        port,
        "GET /x HTTP/1.0\r\nconnection: keep-alive\r\n\r\nGET /y HTTP/1.0\r\n\r\n",
      );
      const parts = responses(kept);
      assertEquals(parts.length, 2, kept);
      assert(/\r\nconnection: keep-alive\r\n/.test(parts[0]), parts[0]);
    });

    await t.step("a 204 carries no Content-Length", async () => {
      const text = await exchange(
        port,
        "GET /204 HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n",
      );
      assert(text.startsWith("HTTP/1.1 204 "), text);
      assert(!/content-length/i.test(text), text);
    });

    await t.step("a response body that fails before its first piece is answered 500", async () => {
      const text = await exchange(port, "GET /fail-first HTTP/1.1\r\nhost: a\r\n\r\n");
      assert(text.startsWith("HTTP/1.1 500 "), text);
    });

    await t.step("a body announced but never sent does not hold the connection", async () => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      try {
        const started = Date.now();
        await conn.write(
          enc.encode("PUT /refuse HTTP/1.1\r\nhost: a\r\ncontent-length: 200000\r\n\r\n"),
        );
        const text = await readText(conn, () => false, 9000);
        assert(text.startsWith("HTTP/1.1 403 "), text);
        const ms = Date.now() - started;
        assert(ms < 8000, `closed after ${ms} ms`);
      } finally {
        conn.close();
      }
    });

    await t.step("a client that reads no response is cut off after the stall time", async () => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      try {
        const started = Date.now();
        // Ask for far more response bytes than socket buffers hold, and read none of them.
        const big = "GET /big HTTP/1.1\r\nhost: a\r\n\r\n";
        await conn.write(enc.encode(big));
        await new Promise((r) => setTimeout(r, STALL_MS + 1500));
        // Then read: what arrives ends with the server's close, well before the whole body.
        const text = await readText(conn, () => false, 5000);
        assert(text.length < 64 * 1024 * 1024, `the whole body arrived (${text.length} bytes)`);
        assert(Date.now() - started < STALL_MS + 8000, "the connection stayed open");
      } finally {
        conn.close();
      }
    });

    await t.step("Expect: 100-continue waits for the handler to read the body", async () => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      try {
        await conn.write(enc.encode(
          "PUT /refuse HTTP/1.1\r\nhost: a\r\ncontent-length: 1000000\r\nexpect: 100-continue\r\n\r\n",
        ));
        const refused = await readText(conn, () => false);
        assert(refused.startsWith("HTTP/1.1 403 Forbidden\r\n"), refused);
        assert(/\r\nconnection: close\r\n/.test(refused), "the unsent body ends the connection");
      } finally {
        conn.close();
      }
      const ok = await Deno.connect({ hostname: "127.0.0.1", port });
      try {
        await ok.write(enc.encode(
          "PUT /upload HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\n",
        ));
        const interim = await readText(ok, (s) => s.endsWith("\r\n\r\n"));
        assertEquals(interim, "HTTP/1.1 100 Continue\r\n\r\n");
        await ok.write(enc.encode("hello"));
        const final = await readText(ok, (s) => s.endsWith("body=hello"));
        assert(final.startsWith("HTTP/1.1 200 OK\r\n"), final);
      } finally {
        ok.close();
      }
    });
  });
});
