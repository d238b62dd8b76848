// Three nodes talking HTTPS to each other: each serves TLS with a certificate of a private CA
// (STORE_TLS_CERT/_KEY), advertises an https:// URL, and trusts the CA through Deno's DENO_CERT
// (the README's recipe). Discovery, heartbeats and object replication all cross TLS.
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { randomBytes } from "node:crypto";
import { Agent } from "node:https";
import { assertEquals } from "./assert.ts";
import { CLUSTER_SECRET, eventually, FAST, freePort } from "./cluster_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, REGION, startServer, type TestServer } from "./server.ts";
import { makeTestCa } from "./tls_certs.ts";

Deno.test("cluster over HTTPS with a private CA", async () => {
  const ca = await makeTestCa();
  const caPem = await Deno.readTextFile(ca.caFile);
  const client = Deno.createHttpClient({ caCerts: [caPem] });
  const ports = [freePort(), freePort(), freePort()];
  const urls = ports.map((p) => `https://127.0.0.1:${p}`);
  const nodes: TestServer[] = [];
  const s3 = (i: number) =>
    new S3Client({
      endpoint: urls[i],
      region: REGION,
      forcePathStyle: true,
      credentials: { accessKeyId: ADMIN_USER, secretAccessKey: ADMIN_PASSWORD },
      maxAttempts: 1,
      requestHandler: { httpsAgent: new Agent({ ca: caPem }) },
    });
  const alivePeers = async (i: number) => {
    const res = await fetch(`${urls[i]}/admin/cluster`, {
      client,
      headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) },
    });
    const body = await res.json() as { nodes: { self: boolean; state: string; url: string }[] };
    return body.nodes.filter((n) => !n.self && n.state === "alive").map((n) => n.url).sort();
  };
  try {
    for (let i = 0; i < 3; i++) {
      const cert = await ca.issue(`node-${i}`);
      nodes.push(
        await startServer({
          env: {
            STORE_PORT: String(ports[i]),
            STORE_TLS_CERT: cert.certFile,
            STORE_TLS_KEY: cert.keyFile,
            STORE_CLUSTER_NODE_ID: `n${i}`,
            STORE_CLUSTER_ADVERTISE_URL: urls[i],
            STORE_CLUSTER_SEEDS: i === 0 ? "" : urls[0],
            STORE_CLUSTER_SECRET: CLUSTER_SECRET,
            DENO_CERT: ca.caFile,
            ...FAST,
          },
        }),
      );
    }
    for (let i = 0; i < 3; i++) {
      await eventually(
        `node ${i} sees the others alive over HTTPS`,
        () => alivePeers(i),
        (peers) => peers.length === 2 && peers.every((u) => u.startsWith("https://")),
      );
    }

    const body = new Uint8Array(randomBytes(300_000));
    await s3(1).send(new CreateBucketCommand({ Bucket: "over-tls" }));
    await eventually("the bucket on every node", async () => {
      const seen = await Promise.all([0, 2].map(async (i) => {
        const res = await fetch(`${urls[i]}/over-tls`, { method: "HEAD", client });
        await res.body?.cancel();
        return res.status;
      }));
      return seen;
    }, (s) => s.every((status) => status !== 404));
    await s3(1).send(new PutObjectCommand({ Bucket: "over-tls", Key: "k", Body: body }));
    for (const i of [0, 2]) {
      const got = await eventually(`the object on node ${i}`, async () => {
        try {
          const out = await s3(i).send(new GetObjectCommand({ Bucket: "over-tls", Key: "k" }));
          return await out.Body!.transformToByteArray();
        } catch {
          return null;
        }
      }, (b) => b !== null);
      assertEquals(got!.byteLength, body.byteLength);
      assertEquals(got!.every((v, j) => v === body[j]), true, "same bytes");
    }
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
    await Promise.all(
      nodes.map((n) => Deno.remove(n.dataDir, { recursive: true }).catch(() => {})),
    );
    client.close();
    await Deno.remove(ca.dir, { recursive: true }).catch(() => {});
  }
});
