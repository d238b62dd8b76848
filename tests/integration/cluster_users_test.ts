// User replication between three nodes on loopback: a user made through the admin API on one
// node signs requests on the others (AWS SDK), its buckets are known everywhere, and disabling,
// re-keying and deleting it on any node reach every node, a node that was down included;
// concurrent changes of one user on two nodes converge.
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListBucketsCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { assert, assertEquals } from "./assert.ts";
import { adminApi, createUser, type TestUser } from "./access_helpers.ts";
import {
  type ClusterNodeProcess,
  clusterStatus,
  eventually,
  restartNode,
  seenBy,
  startNode,
  stopAll,
  userClient,
} from "./cluster_helpers.ts";
import { startPgMeta } from "./postgres_meta_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER } from "./server.ts";

const client = userClient;

/** What ListBuckets signed by `user` on `node` answers: "ok" or the error code. */
async function signIn(node: ClusterNodeProcess, user: TestUser): Promise<string> {
  try {
    await client(node, user).send(new ListBucketsCommand({}));
    return "ok";
  } catch (err) {
    return (err as { name?: string }).name ?? String(err);
  }
}

/** The user as the admin API of `node` shows it (undefined: not there). */
async function userOn(node: ClusterNodeProcess, accessKey: string) {
  const { status, json } = await adminApi(node.server, "GET", `/users/${accessKey}`);
  return status === 200 ? json! : undefined;
}

/** Waits until `user` signs in with `expected` on every node of `nodes`. */
async function signsEverywhere(nodes: ClusterNodeProcess[], user: TestUser, expected: string) {
  for (const node of nodes) {
    await eventually(`${user.name} on ${node.id}`, () => signIn(node, user), (r) => r === expected);
  }
}

Deno.test("cluster: users, their keys and their state reach every node", async (t) => {
  const a = await startNode("node-a");
  const b = await startNode("node-b", { seeds: [a.url] });
  let c = await startNode("node-c", { seeds: [a.url] });
  try {
    await eventually(
      "c sees all",
      () => seenBy(c),
      (s) => s.join() === "node-a:alive,node-b:alive",
    );
    await eventually(
      "a sees all",
      () => seenBy(a),
      (s) => s.join() === "node-b:alive,node-c:alive",
    );
    let carol: TestUser;

    await t.step("a user made on a signs a PUT on b; its bucket is known everywhere", async () => {
      const started = Date.now();
      carol = await createUser(a.server, "carol");
      await signsEverywhere([b, c], carol, "ok");
      console.log(`a user made on a signed on b and c after ${Date.now() - started} ms`);
      const onB = client(b, carol);
      await onB.send(new CreateBucketCommand({ Bucket: "carol-photos" }));
      await onB.send(
        new PutObjectCommand({ Bucket: "carol-photos", Key: "cat.txt", Body: "meow" }),
      );
      for (const node of [a, c]) {
        const read = () =>
          client(node, carol).send(new GetObjectCommand({ Bucket: "carol-photos", Key: "cat.txt" }))
            .then((r) => r.Body!.transformToString()).catch((e) => String(e.name));
        await eventually(`carol reads her object on ${node.id}`, read, (x) => x === "meow");
        const listed = await client(node, carol).send(new ListBucketsCommand({}));
        assertEquals(listed.Buckets?.map((x) => x.Name), ["carol-photos"]);
      }
      // The same record everywhere, secret never shown again.
      const views = await Promise.all([a, b, c].map((n) => userOn(n, carol.accessKey)));
      assertEquals(views[1], views[0]);
      assertEquals(views[2], views[0]);
      assertEquals(views[0]?.secret_key, undefined);
    });

    await t.step("disabled on b: refused on c; enabled on a: accepted again", async () => {
      const off = await adminApi(b.server, "POST", `/users/${carol.accessKey}/disable`);
      assertEquals(off.status, 200);
      await signsEverywhere([c, a], carol, "AccessDenied");
      assertEquals((await userOn(c, carol.accessKey))?.enabled, false);
      assertEquals(
        (await adminApi(a.server, "POST", `/users/${carol.accessKey}/enable`)).status,
        200,
      );
      await signsEverywhere([b, c], carol, "ok");
    });

    await t.step("re-keyed on c: the new key works on a, the old one nowhere", async () => {
      const { status, json } = await adminApi(c.server, "POST", `/users/${carol.accessKey}/keys`);
      assertEquals(status, 200);
      const rekeyed = {
        ...carol,
        accessKey: String(json!.access_key),
        secret: String(json!.secret_key),
      };
      await signsEverywhere([a, b], rekeyed, "ok");
      for (const node of [a, b, c]) assertEquals(await signIn(node, carol), "InvalidAccessKeyId");
      // The new key with the old secret is refused too: the secret travelled with the key.
      const mixed = { ...rekeyed, secret: carol.secret };
      assertEquals(await signIn(a, mixed), "SignatureDoesNotMatch");
      carol = rekeyed;
      const read = await client(a, carol).send(
        new GetObjectCommand({ Bucket: "carol-photos", Key: "cat.txt" }),
      );
      assertEquals(await read.Body!.transformToString(), "meow");
    });

    await t.step("a token issued on a works on b; a share made on b serves on c", async () => {
      const issued = await fetch(`${a.url}/api/v1/tokens`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ access_key: carol.accessKey, secret_key: carol.secret }),
      });
      assertEquals(issued.status, 201);
      const token = (await issued.json()).token as string;
      const api = (node: ClusterNodeProcess, path: string, init: RequestInit = {}) =>
        fetch(`${node.url}/api/v1${path}`, {
          ...init,
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        }).then(async (r) => ({ status: r.status, text: await r.text() }));
      for (const node of [b, c]) {
        await eventually(
          `token on ${node.id}`,
          () => api(node, "/shares"),
          (r) => r.status === 200,
        );
      }
      const made = await api(b, "/shares", {
        method: "POST",
        body: JSON.stringify({ bucket: "carol-photos", permissions: ["read"], expires_in: 3600 }),
      });
      assertEquals(made.status, 201, made.text);
      const share = JSON.parse(made.text) as { id: string; token: string };
      const fetchShare = (node: ClusterNodeProcess) =>
        fetch(`${node.url}/share/${share.token}/cat.txt`).then(async (r) => ({
          status: r.status,
          text: await r.text(),
        }));
      await eventually("share on c", () => fetchShare(c), (r) => r.text === "meow");
      // Revoked on c: refused on every node.
      assertEquals((await api(c, `/shares/${share.id}`, { method: "DELETE" })).status, 204);
      for (const node of [a, b]) {
        await eventually(
          `share revoked on ${node.id}`,
          () => fetchShare(node),
          (r) => r.status === 410,
        );
      }
      // The token revoked on a: refused on b and c.
      assertEquals((await api(a, "/tokens", { method: "DELETE" })).status, 204);
      for (const node of [b, c]) {
        await eventually(
          `token revoked on ${node.id}`,
          () => api(node, "/shares"),
          (r) => r.status === 401,
        );
      }
    });

    await t.step("a node down during the changes catches up after its restart", async () => {
      await c.server.stop();
      await eventually(
        "c dead on a",
        () => seenBy(a),
        (s) => s.join() === "node-b:alive,node-c:dead",
      );
      const dave = await createUser(b.server, "dave");
      const setAccess = await adminApi(a.server, "PUT", `/users/${carol.accessKey}/buckets`, {
        bucket_access: [{ bucket: "shared-x", permission: "read" }],
      });
      assertEquals(setAccess.status, 200);
      const erin = await createUser(a.server, "erin");
      assertEquals((await adminApi(a.server, "DELETE", `/users/${erin.accessKey}`)).status, 204);
      // a holds carol and erin for c (and dave once b's copy reached a), and shows it.
      const waiting = async () =>
        ((await clusterStatus(a)).nodes as unknown as Record<string, number>[])
          .find((n) => (n as unknown as { id: string }).id === "node-c")!;
      const held = await waiting();
      assert(held.user_queue_depth >= 2, JSON.stringify(held));
      const metrics = await (await fetch(`${a.url}/metrics`, {
        headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) },
      })).text();
      const depth = /^store_cluster_user_queue_depth\{node="node-c"\} (\d+)$/m.exec(metrics);
      assert(depth && Number(depth[1]) >= 2, metrics);
      // And 200 more, to time the catch-up.
      for (let i = 0; i < 200; i++) {
        const made = await adminApi(a.server, "POST", "/users", { name: `bulk-${i}` });
        assertEquals(made.status, 201);
      }
      c = await restartNode(c);
      const listening = Date.now();
      const total = async () => Number((await adminApi(c.server, "GET", "/users")).json!.total);
      const expected = Number((await adminApi(a.server, "GET", "/users")).json!.total);
      await eventually("every user on c", total, (n) => n === expected);
      console.log(
        `c had all ${expected} users ${Date.now() - listening} ms after it listened again`,
      );
      await signsEverywhere([c], dave, "ok");
      await signsEverywhere([c], erin, "InvalidAccessKeyId");
      assertEquals(
        (await userOn(c, carol.accessKey))?.bucket_access,
        [{ bucket: "shared-x", permission: "read" }],
      );
      await eventually("a's user queue for c empty", waiting, (n) => n.user_queue_depth === 0);
    });

    await t.step("deleted on a: refused everywhere", async () => {
      assertEquals((await adminApi(a.server, "DELETE", `/users/${carol.accessKey}`)).status, 204);
      await signsEverywhere([a, b, c], carol, "InvalidAccessKeyId");
      for (const node of [a, b, c]) assertEquals(await userOn(node, carol.accessKey), undefined);
    });

    await t.step("concurrent changes of one user on two nodes converge", async () => {
      const frank = await createUser(a.server, "frank");
      await signsEverywhere([b, c], frank, "ok");
      for (let round = 0; round < 3; round++) {
        // At once: bucket access set on a and on b (the same part, two values), disabled on c,
        // re-keyed on a and on b. A request can find the user's access key already rotated by
        // the other node's re-key (404): only what succeeded counts.
        const path = `/users/${frank.accessKey}`;
        const [accessA, accessB, disabled, keyA, keyB] = await Promise.all([
          adminApi(a.server, "PUT", `${path}/buckets`, {
            bucket_access: [{ bucket: `round-${round}-a`, permission: "write" }],
          }),
          adminApi(b.server, "PUT", `${path}/buckets`, {
            bucket_access: [{ bucket: `round-${round}-b`, permission: "read" }],
          }),
          adminApi(c.server, "POST", `${path}/disable`),
          adminApi(a.server, "POST", `${path}/keys`),
          adminApi(b.server, "POST", `${path}/keys`),
        ]);
        const keys = [keyA, keyB].filter((k) => k.status === 200).map((k) => ({
          ...frank,
          accessKey: String(k.json!.access_key),
          secret: String(k.json!.secret_key),
        }));
        assert(keys.length > 0, "a re-key succeeded");
        const accesses = [accessA, accessB].filter((x) => x.status === 200).map((x) =>
          JSON.stringify(x.json!.bucket_access)
        );
        // Every node ends with the same record.
        const same = await eventually(
          `round ${round}: the same user on all nodes`,
          () =>
            Promise.all([a, b, c].map(async (n) => {
              const { json } = await adminApi(n.server, "GET", "/users");
              return JSON.stringify(
                (json!.users as Record<string, unknown>[]).filter((u) => u.name === "frank"),
              );
            })),
          (all) => all[0] !== "[]" && all.every((x) => x === all[0]),
        );
        const [view] = JSON.parse(same[0]) as Record<string, unknown>[];
        if (disabled.status === 200) assertEquals(view.enabled, false);
        if (accesses.length > 0) {
          assert(accesses.includes(JSON.stringify(view.bucket_access)), same[0]);
        }
        const winner = keys.find((k) => k.accessKey === view.access_key);
        assert(winner, `the key kept is one of those issued: ${view.access_key}`);
        // Enabled again on c, the winning key signs on every node; the other key on none.
        const enabled = await adminApi(c.server, "POST", `/users/${winner.accessKey}/enable`);
        assertEquals(enabled.status, 200);
        await signsEverywhere([a, b, c], winner, "ok");
        for (const loser of keys.filter((k) => k !== winner)) {
          for (const node of [a, b, c]) {
            assertEquals(await signIn(node, loser), "InvalidAccessKeyId");
          }
        }
        console.log(
          `round ${round}: ${accesses.length} access changes, disable ${disabled.status}, ` +
            `${keys.length} re-keys succeeded; the same record on all three nodes`,
        );
        frank.accessKey = winner.accessKey;
        frank.secret = winner.secret;
      }
    });
  } finally {
    await stopAll([a, b, c]);
  }
});

Deno.test("cluster: users replicate between nodes that keep their metadata in PostgreSQL", async () => {
  const pg = await startPgMeta();
  const nodes: ClusterNodeProcess[] = [];
  try {
    const env = async () => ({ STORE_META_URL: await pg.database() });
    const a = await startNode("node-a", { env: await env() });
    nodes.push(a);
    nodes.push(await startNode("node-b", { seeds: [a.url], env: await env() }));
    nodes.push(await startNode("node-c", { seeds: [a.url], env: await env() }));
    const [, b, c] = nodes;
    for (const n of nodes) {
      await eventually(
        `${n.id} sees the others`,
        () => seenBy(n),
        (s) => s.length === 2 && s.every((x) => x.endsWith(":alive")),
      );
    }
    let gina = await createUser(a.server, "gina");
    await signsEverywhere([b, c], gina, "ok");
    await client(b, gina).send(new CreateBucketCommand({ Bucket: "gina-pg" }));
    await eventually(
      "gina's bucket on c",
      () =>
        client(c, gina).send(new ListBucketsCommand({})).then((o) => o.Buckets?.map((x) => x.Name)),
      (names) => names?.join() === "gina-pg",
    );
    assertEquals(
      (await adminApi(b.server, "POST", `/users/${gina.accessKey}/disable`)).status,
      200,
    );
    await signsEverywhere([a, c], gina, "AccessDenied");
    assertEquals((await adminApi(b.server, "POST", `/users/${gina.accessKey}/enable`)).status, 200);
    const { json } = await adminApi(c.server, "POST", `/users/${gina.accessKey}/keys`);
    const old = gina;
    gina = { ...gina, accessKey: String(json!.access_key), secret: String(json!.secret_key) };
    await signsEverywhere([a, b], gina, "ok");
    await signsEverywhere([a, b, c], old, "InvalidAccessKeyId");
    assertEquals((await adminApi(a.server, "DELETE", `/users/${gina.accessKey}`)).status, 204);
    await signsEverywhere([a, b, c], gina, "InvalidAccessKeyId");
  } finally {
    await stopAll(nodes);
    await pg.dispose();
  }
});
