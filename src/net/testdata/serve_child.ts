// A listener without a connection cap, for listener_test.ts: run under a low open-file limit so
// accepting fails with "Too many open files".
import { serveConnections } from "../listener.ts";

// As main.ts does, before any connection: Deno's signal machinery needs a descriptor once.
Deno.addSignalListener("SIGTERM", () => Deno.exit(0));

const server = serveConnections({
  hostname: "127.0.0.1",
  port: 0,
  limits: {
    headerTimeoutMs: 60_000,
    idleTimeoutMs: 60_000,
    maxConnections: 1_000_000,
    stallMs: 60_000,
  },
  onListen: ({ port }) => console.log(`listening ${port}`),
  onError: () => new Response(null, { status: 500 }),
  warn: (message, fields) => console.error(JSON.stringify({ message, ...fields })),
}, () => new Response("ok"));
await server.finished;
console.log("finished");
