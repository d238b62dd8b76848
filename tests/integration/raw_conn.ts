// Raw TCP clients for tests of connection handling: slow headers, stalled bodies, idle sockets.

const enc = new TextEncoder();

export function connect(port: number): Promise<Deno.TcpConn> {
  return Deno.connect({ hostname: "127.0.0.1", port });
}

export async function send(conn: Deno.Conn, text: string | Uint8Array): Promise<void> {
  const bytes = typeof text === "string" ? enc.encode(text) : text;
  let offset = 0;
  while (offset < bytes.byteLength) offset += await conn.write(bytes.subarray(offset));
}

/**
 * Reads until the server closes the connection or `withinMs` passes. Returns what arrived, and
 * whether (and after how many ms) the connection closed.
 */
export async function readUntilClosed(
  conn: Deno.Conn,
  withinMs: number,
): Promise<{ text: string; closedAfterMs?: number }> {
  const started = performance.now();
  const buf = new Uint8Array(64 * 1024);
  let text = "";
  const decoder = new TextDecoder();
  const timer = setTimeout(() => {
    try {
      conn.close();
    } catch { /* already closed */ }
  }, withinMs);
  let closedAfterMs: number | undefined;
  try {
    while (true) {
      const n = await conn.read(buf);
      if (n === null) {
        closedAfterMs = performance.now() - started;
        break;
      }
      text += decoder.decode(buf.subarray(0, n), { stream: true });
    }
  } catch (err) {
    // A reset by the server counts as closed; our own close (timeout) throws BadResource.
    if (!(err instanceof Deno.errors.BadResource)) closedAfterMs = performance.now() - started;
  } finally {
    clearTimeout(timer);
  }
  try {
    conn.close();
  } catch { /* already closed */ }
  return { text, closedAfterMs };
}

/** The status code of the first response in `text`, or undefined. */
export function statusOf(text: string): number | undefined {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
  return m ? Number(m[1]) : undefined;
}
