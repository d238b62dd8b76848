// Three nodes on loopback: discovery through one seed, health from heartbeats (suspect, dead,
// alive again), signed node calls (unsigned, wrong, replayed, expired, tampered calls refused),
// and the admin-only GET /admin/cluster.
import { assert, assertEquals, assertMatch } from "./assert.ts";
import {
  CLUSTER_SECRET,
  clusterAuthorization,
  clusterStatus,
  eventually,
  rawCall,
  restartNode,
  seenBy,
  startNode,
  stopAll,
} from "./cluster_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, startServer, withServer } from "./server.ts";

const allAlive = (others: string[]) => (seen: string[]) =>
  seen.join() === others.map((id) => `${id}:alive`).join();

async function errorOf(res: Response): Promise<[number, string]> {
  const json = await res.json();
  return [res.status, json.error?.code];
}

Deno.test("cluster: three nodes on loopback", async (t) => {
  let a = await startNode("node-a");
  let b = await startNode("node-b", { seeds: [a.url] });
  let c = await startNode("node-c", { seeds: [a.url] });
  const nodes = () => [a, b, c];
  try {
    await t.step("every node finds every other through the one seed", async () => {
      await eventually("a sees b and c", () => seenBy(a), allAlive(["node-b", "node-c"]));
      // b and c only know a's URL: they learn each other from a's list.
      await eventually("b sees a and c", () => seenBy(b), allAlive(["node-a", "node-c"]));
      await eventually("c sees a and b", () => seenBy(c), allAlive(["node-a", "node-b"]));
      const status = await clusterStatus(b);
      assertEquals(status.enabled, true);
      const self = status.nodes.find((n) => n.self)!;
      assertEquals([self.id, self.url, self.state], ["node-b", b.url, "alive"]);
      const peer = status.nodes.find((n) => n.id === "node-c")!;
      assertEquals(peer.url, c.url);
      assert(Date.now() - Date.parse(peer.last_heartbeat!) < 5000, "a recent heartbeat");
    });

    await t.step("/metrics counts the other nodes by state and shows the backlog", async () => {
      const res = await fetch(`${a.url}/metrics`, {
        headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) },
      });
      const text = await res.text();
      assertMatch(text, /^store_cluster_nodes\{state="alive"\} 2$/m);
      assertMatch(text, /^store_cluster_nodes\{state="dead"\} 0$/m);
      assertMatch(text, /^store_cluster_replication_queue_depth\{node="node-b"\} 0$/m);
      assertMatch(text, /^store_cluster_replication_lag_seconds\{node="node-c"\} 0$/m);
    });

    await t.step("a killed node turns suspect, then dead, then alive after restart", async () => {
      await c.server.kill();
      const started = Date.now();
      await eventually("c suspect on a", () => seenBy(a), (s) => s.includes("node-c:suspect"));
      await eventually("c dead on a", () => seenBy(a), (s) => s.includes("node-c:dead"));
      await eventually("c dead on b", () => seenBy(b), (s) => s.includes("node-c:dead"));
      assert(Date.now() - started >= 5000, "dead only after the dead-after time");
      c = await restartNode(c);
      await eventually("a sees c again", () => seenBy(a), allAlive(["node-b", "node-c"]));
      await eventually("b sees c again", () => seenBy(b), allAlive(["node-a", "node-c"]));
      await eventually("c sees both", () => seenBy(c), allAlive(["node-a", "node-b"]));
    });

    await t.step("a node stopped gracefully is dead at once (it said it leaves)", async () => {
      await b.server.stop();
      const started = Date.now();
      await eventually("b dead on a", () => seenBy(a), (s) => s.includes("node-b:dead"), 2500);
      assert(Date.now() - started < 3000, "before it could have turned suspect");
      b = await restartNode(b);
      await eventually("a sees b again", () => seenBy(a), allAlive(["node-b", "node-c"]));
    });

    await t.step("the seed itself restarts and finds the others again", async () => {
      await a.server.kill();
      a = await restartNode(a);
      // a has no seeds: it is found again by the heartbeats b and c keep sending it.
      await eventually("a sees b and c", () => seenBy(a), allAlive(["node-b", "node-c"]));
    });

    await t.step("a correctly signed call is answered and signed back", async () => {
      const res = await rawCall(a.url, { method: "GET", path: "/cluster/ping" });
      assertEquals(res.status, 200);
      assertMatch(res.headers.get("cluster-signature") ?? "", /^[0-9a-f]{64}$/);
      const body = await res.json();
      assertEquals(body.node, { id: "node-a", url: a.url });
    });

    await t.step("unsigned, wrongly signed, tampered and expired calls get 403", async () => {
      const body = JSON.stringify({
        node: { id: "intruder", url: "http://127.0.0.1:1" },
        members: [{ id: "ghost", url: "http://127.0.0.1:2" }],
      });
      const call = { method: "POST", path: "/cluster/heartbeat", body, node: "intruder" };
      assertEquals(await errorOf(await rawCall(a.url, call, "")), [403, "cluster_unsigned"]);
      assertEquals(await errorOf(await rawCall(a.url, call, "Basic eDp5")), [
        403,
        "cluster_unsigned",
      ]);
      assertEquals(await errorOf(await rawCall(a.url, { ...call, secret: "w".repeat(40) })), [
        403,
        "cluster_bad_signature",
      ]);
      // Signed for another route than the one called.
      const forJoin = await rawCall(
        a.url,
        { ...call, path: "/cluster/join" },
        clusterAuthorization(call),
      );
      assertEquals(await errorOf(forJoin), [403, "cluster_bad_signature"]);
      // Signed for another body than the one sent.
      assertEquals(await errorOf(await rawCall(a.url, { ...call, signedBody: "{}" })), [
        403,
        "cluster_bad_signature",
      ]);
      for (const skew of [-10 * 60_000, 10 * 60_000]) {
        assertEquals(
          await errorOf(await rawCall(a.url, { ...call, timestamp: Date.now() + skew })),
          [403, "cluster_expired"],
        );
      }
      // None of that changed a's view.
      assertEquals(await seenBy(a), ["node-b:alive", "node-c:alive"]);
    });

    await t.step("a replayed call is refused", async () => {
      const call = { method: "GET", path: "/cluster/ping", node: "node-x" };
      const auth = clusterAuthorization(call);
      const first = await rawCall(b.url, call, auth);
      assertEquals(first.status, 200);
      await first.body?.cancel();
      assertEquals(await errorOf(await rawCall(b.url, call, auth)), [403, "cluster_replayed"]);
      // The same call on another node is not a replay there (nonces are per node).
      const elsewhere = await rawCall(c.url, call, auth);
      assertEquals(elsewhere.status, 200);
      await elsewhere.body?.cancel();
    });

    await t.step(
      "bodies over the limit, wrong methods and unknown routes are refused",
      async () => {
        const big = JSON.stringify({ pad: "x".repeat(70 * 1024) });
        const res = await rawCall(a.url, { method: "POST", path: "/cluster/heartbeat", body: big });
        assertEquals(res.status, 413);
        await res.body?.cancel();
        assertEquals(
          await errorOf(
            await rawCall(a.url, { method: "POST", path: "/cluster/ping", body: "{}" }),
          ),
          [
            405,
            "method_not_allowed",
          ],
        );
        assertEquals(
          await errorOf(await rawCall(a.url, { method: "GET", path: "/cluster/nope" })),
          [
            404,
            "not_found",
          ],
        );
        // The body must name the node that signed.
        const other = JSON.stringify({ node: { id: "node-b", url: b.url } });
        assertEquals(
          await errorOf(
            await rawCall(a.url, {
              method: "POST",
              path: "/cluster/heartbeat",
              body: other,
              node: "z",
            }),
          ),
          [400, "node_mismatch"],
        );
      },
    );

    await t.step(
      "audit: refused calls and joins are recorded, routine heartbeats not",
      async () => {
        const audit = async (operation: string) => {
          const res = await fetch(`${a.url}/admin/audit?operation=${operation}&limit=1000`, {
            headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) },
          });
          assertEquals(res.status, 200);
          const { entries } = await res.json() as {
            entries: { status: number; principal: string; error_code: string }[];
          };
          return entries;
        };
        const beats = await audit("Cluster:heartbeat");
        // Seconds of heartbeats from two nodes went by: only the refused ones left entries.
        assert(beats.length > 0 && beats.every((e) => e.status >= 400), JSON.stringify(beats));
        assert(beats.some((e) => e.error_code === "cluster_expired"));
        const joins = await audit("Cluster:join");
        assert(joins.some((e) => e.status === 200 && /^node:node-[bc]$/.test(e.principal)));
      },
    );

    await t.step("GET /admin/cluster is for the administrator only", async () => {
      const none = await fetch(`${a.url}/admin/cluster`);
      assertEquals(await errorOf(none), [401, "unauthorized"]);
      const wrong = await fetch(`${a.url}/admin/cluster`, {
        headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:not-the-password`) },
      });
      assertEquals(await errorOf(wrong), [401, "unauthorized"]);
      // A valid cluster signature is no administrator credential.
      const signed = await rawCall(a.url, { method: "GET", path: "/admin/cluster" });
      assertEquals(signed.status, 401);
      await signed.body?.cancel();
    });
  } finally {
    await stopAll(nodes());
  }
});

Deno.test("cluster: off by default; a short secret stops the start", async () => {
  await withServer(async (server) => {
    const ping = await fetch(`${server.url}/cluster/ping`);
    assertEquals(await errorOf(ping), [404, "cluster_disabled"]);
    const status = await clusterStatus(server);
    assertEquals([status.enabled, status.nodes.length], [false, 0]);
  });
  let failure = "";
  await startServer({
    env: {
      STORE_CLUSTER_NODE_ID: "a",
      STORE_CLUSTER_ADVERTISE_URL: "http://127.0.0.1:9",
      STORE_CLUSTER_SECRET: CLUSTER_SECRET.slice(0, 31),
    },
  }).then((s) => s.stop(), (err) => failure = String(err));
  assertMatch(failure, /Configuration error: STORE_CLUSTER_SECRET must be 32 to 1024/);
});
