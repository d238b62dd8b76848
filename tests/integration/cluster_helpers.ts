// Three-node clusters on loopback for tests: each node on its own port and data directory, and
// an independent signer of cluster calls written from the README's description of the format.
import { createHash, createHmac, randomBytes } from "node:crypto";
import { HeadBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { DatabaseSync } from "node:sqlite";
import { ADMIN_PASSWORD, ADMIN_USER, REGION, startServer, type TestServer } from "./server.ts";

export const CLUSTER_SECRET = "cluster-test-secret-0123456789abcdef";

/** Fast timings: heartbeat 1 s, suspect after 3 s, dead after 6 s. */
export const FAST = {
  STORE_CLUSTER_HEARTBEAT: "1",
  STORE_CLUSTER_SUSPECT_AFTER: "3",
  STORE_CLUSTER_DEAD_AFTER: "6",
};

export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

export interface ClusterNodeProcess {
  id: string;
  port: number;
  url: string;
  dataDir: string;
  seeds: string[];
  server: TestServer;
}

export async function startNode(
  id: string,
  opts: { port?: number; dataDir?: string; seeds?: string[]; env?: Record<string, string> } = {},
): Promise<ClusterNodeProcess> {
  const port = opts.port ?? freePort();
  const url = `http://127.0.0.1:${port}`;
  const seeds = opts.seeds ?? [];
  const server = await startServer({
    dataDir: opts.dataDir,
    env: {
      STORE_PORT: String(port),
      STORE_CLUSTER_NODE_ID: id,
      STORE_CLUSTER_ADVERTISE_URL: url,
      STORE_CLUSTER_SEEDS: seeds.join(","),
      STORE_CLUSTER_SECRET: CLUSTER_SECRET,
      ...FAST,
      ...opts.env,
    },
  });
  return { id, port, url, dataDir: server.dataDir, seeds, server };
}

/** The same node again (same id, port, data directory and seeds) after it stopped. */
export function restartNode(node: ClusterNodeProcess): Promise<ClusterNodeProcess> {
  return startNode(node.id, { port: node.port, dataDir: node.dataDir, seeds: node.seeds });
}

/**
 * Runs `fn`; when it throws, the error carries each node's last warnings and errors from its log
 * (why a replication lagged, for a failure seen only once in a while on a loaded machine).
 */
export async function withNodeWarnings<T>(
  nodes: ClusterNodeProcess[],
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const lines = nodes.map((n) => {
      const warnings = n.server.logs().split("\n")
        .filter((l) => /"level":"(warn|error)"/.test(l)).slice(-15);
      return `--- ${n.id}: ${warnings.length} warnings and errors (last 15)\n${
        warnings.join("\n")
      }`;
    });
    throw new Error(`${err instanceof Error ? err.message : err}\n${lines.join("\n")}`);
  }
}

export async function stopAll(nodes: ClusterNodeProcess[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.server.stop()));
  await Promise.all(nodes.map((n) => Deno.remove(n.dataDir, { recursive: true }).catch(() => {})));
}

export interface ClusterNodeView {
  id: string;
  url: string;
  self: boolean;
  state: string;
  last_heartbeat: string | null;
}

export async function clusterStatus(
  node: { url: string },
): Promise<{ enabled: boolean; nodes: ClusterNodeView[] }> {
  const res = await fetch(`${node.url}/admin/cluster`, {
    headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) },
  });
  if (res.status !== 200) throw new Error(`/admin/cluster: ${res.status} ${await res.text()}`);
  return await res.json();
}

/** `id:state` of every other node, as `node` sees them, in id order. */
export async function seenBy(node: { url: string }): Promise<string[]> {
  const { nodes } = await clusterStatus(node);
  return nodes.filter((n) => !n.self).map((n) => `${n.id}:${n.state}`);
}

/** Polls until `check` holds (returns true), or fails after `ms` with the last value seen. */
export async function eventually<T>(
  what: string,
  read: () => Promise<T>,
  check: (value: T) => boolean,
  ms = 20_000,
): Promise<T> {
  const until = Date.now() + ms;
  let last: T | undefined;
  while (Date.now() < until) {
    last = await read();
    if (check(last)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: not reached in ${ms} ms; last seen ${JSON.stringify(last)}`);
}

export interface RawCall {
  method: string;
  path: string;
  body?: string;
  node?: string;
  secret?: string;
  timestamp?: number;
  nonce?: string;
  /** Sign this digest instead of the body's. */
  signedBody?: string;
}

/** The Authorization header of a call, built as the README documents it. */
export function clusterAuthorization(call: RawCall): string {
  const timestamp = call.timestamp ?? Date.now();
  const nonce = call.nonce ?? randomBytes(16).toString("hex");
  const node = call.node ?? "tester";
  const digest = createHash("sha256").update(call.signedBody ?? call.body ?? "").digest("hex");
  const text = [
    "CLUSTER-HMAC-SHA256",
    call.method,
    call.path,
    node,
    String(timestamp),
    nonce,
    digest,
  ].join("\n");
  const signature = createHmac("sha256", call.secret ?? CLUSTER_SECRET).update(text).digest("hex");
  return `CLUSTER-HMAC-SHA256 Node=${node}, Timestamp=${timestamp}, Nonce=${nonce}, ` +
    `Body=${digest}, Signature=${signature}`;
}

export function rawCall(
  base: string,
  call: RawCall,
  authorization = clusterAuthorization(call),
): Promise<Response> {
  return fetch(base + call.path, {
    method: call.method,
    headers: {
      authorization,
      ...(call.body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: call.body,
  });
}

/** An SDK client of `node` signing with a user's keys (one attempt: errors show as they are). */
export function userClient(
  node: { url: string },
  user: { accessKey: string; secret: string },
): S3Client {
  return new S3Client({
    endpoint: node.url,
    region: REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: user.accessKey, secretAccessKey: user.secret },
    maxAttempts: 1,
  });
}

/** Whether the bucket exists on the node the client talks to (HeadBucket: 404 is false). */
export async function bucketExists(s3: S3Client, bucket: string): Promise<boolean> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
    return true;
  } catch (err) {
    if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) {
      return false;
    }
    throw err;
  }
}

/** Rows in a node's object-change queue (its SQLite metadata, read beside the running server). */
export function queuedObjectChanges(node: ClusterNodeProcess): number {
  const db = new DatabaseSync(`${node.dataDir}/meta.db`, { readOnly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM cluster_object_changes").get() as { n: number })
      .n;
  } finally {
    db.close();
  }
}
