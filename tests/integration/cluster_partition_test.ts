// A real network partition: three nodes, each in its own network namespace (ip netns) on a
// bridge made by the test. Node C's bridge link is cut while both sides take writes (the test
// reaches C over a second, direct link that the other nodes have no route to), then restored:
// every node ends with the union of the writes, same bytes and ETags. Needs root (or
// CAP_NET_ADMIN) and iproute2; where the machine does not allow network namespaces the test is
// skipped with a message saying so.
import {
  CreateBucketCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { assertEquals } from "./assert.ts";
import { CLUSTER_SECRET, eventually, FAST } from "./cluster_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, REGION, startServer, type TestServer } from "./server.ts";

async function ip(...args: string[]): Promise<{ ok: boolean; err: string }> {
  const out = await new Deno.Command("ip", { args, stdout: "null", stderr: "piped" }).output();
  return { ok: out.success, err: new TextDecoder().decode(out.stderr).trim() };
}

async function must(...args: string[]): Promise<void> {
  const { ok, err } = await ip(...args);
  if (!ok) throw new Error(`ip ${args.join(" ")}: ${err}`);
}

/** Why network namespaces cannot be used here, or null when they can. */
async function netnsUnavailable(): Promise<string | null> {
  const name = `probe${crypto.randomUUID().slice(0, 8)}`;
  try {
    const added = await ip("netns", "add", name);
    if (!added.ok) return `ip netns add failed: ${added.err}`;
    await ip("netns", "del", name);
    return null;
  } catch (err) {
    return `iproute2 is not usable: ${err}`;
  }
}

const unavailable = await netnsUnavailable();
if (unavailable) {
  console.warn(`cluster_partition_test skipped: network namespaces unavailable (${unavailable})`);
}

interface Net {
  /** Node i's address on the shared bridge (what the nodes use). */
  bridged: string[];
  /** Node C's address on its direct link to the test. */
  direct: string;
  cut(): Promise<void>;
  heal(): Promise<void>;
  namespace(i: number): string;
  remove(): Promise<void>;
}

async function makeNet(): Promise<Net> {
  const tag = crypto.randomUUID().slice(0, 4);
  const subnet = 100 + Math.floor(Math.random() * 150);
  const bridge = `sbr${tag}`;
  const ns = (i: number) => `sns${tag}${i}`;
  const bridged = [0, 1, 2].map((i) => `10.213.${subnet}.${i + 1}`);
  const direct = `10.214.${subnet}.3`;
  const created: string[] = [];
  const net: Net = {
    bridged,
    direct,
    cut: () => must("link", "set", `sv${tag}2`, "down"),
    heal: () => must("link", "set", `sv${tag}2`, "up"),
    namespace: ns,
    async remove() {
      for (const n of created) await ip("netns", "del", n);
      await ip("link", "del", bridge);
      await ip("link", "del", `sd${tag}`);
    },
  };
  try {
    await must("link", "add", bridge, "type", "bridge");
    await must("addr", "add", `10.213.${subnet}.254/24`, "dev", bridge);
    await must("link", "set", bridge, "up");
    for (const i of [0, 1, 2]) {
      await must("netns", "add", ns(i));
      created.push(ns(i));
      await must("link", "add", `sv${tag}${i}`, "type", "veth", "peer", "name", `svp${tag}${i}`);
      await must("link", "set", `svp${tag}${i}`, "netns", ns(i));
      await must("link", "set", `sv${tag}${i}`, "master", bridge, "up");
      await must("-n", ns(i), "addr", "add", `${bridged[i]}/24`, "dev", `svp${tag}${i}`);
      await must("-n", ns(i), "link", "set", `svp${tag}${i}`, "up");
      await must("-n", ns(i), "link", "set", "lo", "up");
    }
    // The test's own way to node C, which stays up while C is cut off from A and B.
    await must("link", "add", `sd${tag}`, "type", "veth", "peer", "name", `sdp${tag}`);
    await must("link", "set", `sdp${tag}`, "netns", ns(2));
    await must("addr", "add", `10.214.${subnet}.254/24`, "dev", `sd${tag}`);
    await must("link", "set", `sd${tag}`, "up");
    await must("-n", ns(2), "addr", "add", `${direct}/24`, "dev", `sdp${tag}`);
    await must("-n", ns(2), "link", "set", `sdp${tag}`, "up");
    return net;
  } catch (err) {
    await net.remove();
    throw err;
  }
}

Deno.test({
  name: "cluster: a network partition heals and every node converges",
  ignore: unavailable !== null,
  async fn() {
    const net = await makeNet();
    const port = 9000 + Math.floor(Math.random() * 1000);
    const urls = net.bridged.map((a) => `http://${a}:${port}`);
    const nodes: TestServer[] = [];
    const s3 = (url: string) =>
      new S3Client({
        endpoint: url,
        region: REGION,
        forcePathStyle: true,
        credentials: { accessKeyId: ADMIN_USER, secretAccessKey: ADMIN_PASSWORD },
        maxAttempts: 1,
      });
    const clients = [s3(urls[0]), s3(urls[1]), s3(`http://${net.direct}:${port}`)];
    const state = async (i: number, of: string) => {
      const url = i === 2 ? `http://${net.direct}:${port}` : urls[i];
      const res = await fetch(`${url}/admin/cluster`, {
        headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) },
      });
      const body = await res.json() as { nodes: { id: string; state: string }[] };
      return body.nodes.find((n) => n.id === of)?.state;
    };
    const listing = async (i: number) => {
      const out = await clients[i].send(new ListObjectsV2Command({ Bucket: "split" }));
      return (out.Contents ?? []).map((o) => `${o.Key}=${o.ETag}`).sort().join(",");
    };
    try {
      for (const i of [0, 1, 2]) {
        nodes.push(
          await startServer({
            prefix: ["ip", "netns", "exec", net.namespace(i)],
            env: {
              STORE_ADDRESS: "0.0.0.0",
              STORE_PORT: String(port),
              STORE_CLUSTER_NODE_ID: `n${i}`,
              STORE_CLUSTER_ADVERTISE_URL: urls[i],
              STORE_CLUSTER_SEEDS: i === 0 ? "" : urls[0],
              STORE_CLUSTER_SECRET: CLUSTER_SECRET,
              ...FAST,
            },
          }),
        );
      }
      for (const [i, other] of [[0, "n2"], [2, "n0"], [1, "n2"]] as const) {
        await eventually(`n${i} sees ${other} alive`, () => state(i, other), (s) => s === "alive");
      }
      await clients[0].send(new CreateBucketCommand({ Bucket: "split" }));
      await eventually("the bucket on C", () => listing(2).then(() => true, () => false), Boolean);
      for (let k = 0; k < 10; k++) {
        await clients[k % 3].send(
          new PutObjectCommand({ Bucket: "split", Key: `before-${k}`, Body: `before ${k}` }),
        );
      }

      await net.cut();
      await eventually(
        "A sees C gone",
        () => state(0, "n2"),
        (s) => s === "suspect" || s === "dead",
      );
      await eventually(
        "C sees A gone",
        () => state(2, "n0"),
        (s) => s === "suspect" || s === "dead",
      );
      for (let k = 0; k < 30; k++) {
        // Both sides of the split take writes, some to the same keys.
        const side = k % 2 === 0 ? 0 : 2;
        await clients[side].send(
          new PutObjectCommand({ Bucket: "split", Key: `during-${k}`, Body: `n${side} ${k}` }),
        );
      }
      await clients[1].send(
        new PutObjectCommand({ Bucket: "split", Key: "before-0", Body: "changed on B" }),
      );

      // The split is real: neither side has the other's writes yet.
      assertEquals((await listing(2)).includes("during-0="), false, "C got A's write");
      assertEquals((await listing(0)).includes("during-1="), false, "A got C's write");

      await net.heal();
      const converged = await eventually(
        "every node holds the same objects",
        () => Promise.all([0, 1, 2].map(listing)),
        (l) => l[0] === l[1] && l[1] === l[2] && l[0].split(",").length === 40,
        60_000,
      );
      assertEquals(converged[0], converged[2]);
    } finally {
      await Promise.all(nodes.map((n) => n.stop()));
      await Promise.all(
        nodes.map((n) => Deno.remove(n.dataDir, { recursive: true }).catch(() => {})),
      );
      await net.remove();
    }
  },
});
