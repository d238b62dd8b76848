// Health probes: unauthenticated, no details, at /health/* and at the paths container checks and
// `mc ready` use; readiness follows the drives online against the erasure layout. A bucket named
// "minio" keeps working (only the exact probe paths are taken).
import { assertEquals } from "./assert.ts";
import { join } from "node:path";
import { type TestServer } from "./server.ts";
import {
  createBucket,
  expectBytes,
  makeSetup,
  putOk,
  removeSetup,
  startFresh,
  startStorage,
  textBytes,
} from "./storage_helpers.ts";

const PATHS = [
  "/health/live",
  "/health/ready",
  "/minio/health/live",
  "/minio/health/ready",
  "/minio/health/cluster",
  "/minio/health/cluster/read",
];

async function statuses(server: TestServer): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const path of PATHS) {
    const res = await fetch(server.url + path);
    const body = await res.text();
    assertEquals(body, "", `${path} tells no details`);
    out[path] = res.status;
  }
  return out;
}

function all(status: number, read = status): Record<string, number> {
  return Object.fromEntries(
    PATHS.map((p) => [p, p.endsWith("/live") ? 200 : p.endsWith("/read") ? read : status]),
  );
}

Deno.test("health: probes answer without credentials, follow the drives online", async () => {
  const setup = await makeSetup(4);
  try {
    let server = await startFresh(setup, { ec: "2+2" });
    try {
      assertEquals(await statuses(server), all(200));
      // HEAD works (curl -I); other methods do not.
      const head = await fetch(server.url + "/minio/health/cluster", { method: "HEAD" });
      assertEquals(head.status, 200);
      const post = await fetch(server.url + "/health/ready", { method: "POST" });
      assertEquals(post.status, 405);
      await post.body?.cancel();
      // "minio" is a valid bucket name: its objects, even under health/, stay reachable.
      await createBucket(server, "minio");
      const bytes = textBytes(3000);
      await putOk(server, "minio", "health/report.txt", bytes);
      await expectBytes(server, "minio", "health/report.txt", bytes);
    } finally {
      await server.stop();
    }

    // One drive removed: 3 of 4 are still a write quorum for 2+2.
    await Deno.rename(setup.drives[3], join(setup.root, "away-3"));
    server = await startStorage(setup, { ec: "2+2" });
    try {
      assertEquals(await statuses(server), all(200));
    } finally {
      await server.stop();
    }

    // Two removed: reads still have k = 2 drives, writes have no quorum: not ready.
    await Deno.rename(setup.drives[2], join(setup.root, "away-2"));
    server = await startStorage(setup, { ec: "2+2" });
    try {
      assertEquals(await statuses(server), all(503, 200));
    } finally {
      await server.stop();
    }
  } finally {
    await removeSetup(setup);
  }
});
