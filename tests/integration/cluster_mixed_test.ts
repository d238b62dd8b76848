// A mixed cluster: two nodes sharing one PostgreSQL metadata database and a third keeping its
// own (SQLite). Buckets, objects and users written on any node reach all three; the nodes on the
// database receive the third's changes as rows (one database), their bytes follow by fetch, and
// only one of them sends the shared queues to the third. A directory mapping changed on one node
// of the database applies on the other (which reads the shared rows) and on the third.
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { adminApi, createUser, type TestUser } from "./access_helpers.ts";
import { assertEquals } from "./assert.ts";
import {
  type ClusterNodeProcess,
  eventually,
  seenBy,
  startNode,
  stopAll,
  userClient,
} from "./cluster_helpers.ts";
import { startPgMeta } from "./postgres_meta_helpers.ts";
import { createSlapd, READER_PASSWORD, SUFFIXES } from "../services/slapd.ts";
import { s3Client } from "./server.ts";

const MASTER_KEY = "cd".repeat(32);

/** The object's body on the node, or the error's name. */
function read(node: ClusterNodeProcess, key: string): Promise<string> {
  return s3Client(node.server).send(new GetObjectCommand({ Bucket: "mixed", Key: key }))
    .then((o) => o.Body!.transformToString(), (e) => String(e.name));
}

Deno.test("cluster: two nodes on one PostgreSQL database and one on its own metadata", async (t) => {
  const pg = await startPgMeta();
  const url = await pg.database();
  const sql = pg.query(url);
  const slapd = await createSlapd();
  await slapd.start();
  const base = SUFFIXES.openldap;
  const ldap = {
    STORE_LDAP_ENABLED: "true",
    STORE_LDAP_URL: slapd.url,
    STORE_LDAP_BASE_DN: base,
    STORE_LDAP_BIND_DN: `cn=reader,${base}`,
    STORE_LDAP_BIND_PASSWORD: READER_PASSWORD,
  };
  const shared = { ...ldap, STORE_META_URL: url, STORE_MASTER_KEY: MASTER_KEY };
  const nodes: ClusterNodeProcess[] = [];
  try {
    const a = await startNode("node-a", { env: shared });
    nodes.push(a);
    const b = await startNode("node-b", { seeds: [a.url], env: shared });
    nodes.push(b);
    const c = await startNode("node-c", { seeds: [a.url], env: ldap });
    nodes.push(c);
    for (const n of nodes) {
      await eventually(
        `${n.id} sees the others`,
        () => seenBy(n),
        (s) => s.length === 2 && s.every((x) => x.endsWith(":alive")),
      );
    }

    await t.step("a bucket made on the node of its own reaches both on the database", async () => {
      await s3Client(c.server).send(new CreateBucketCommand({ Bucket: "mixed" }));
      for (const n of [a, b]) {
        await eventually(
          `mixed on ${n.id}`,
          () =>
            s3Client(n.server).send(new HeadBucketCommand({ Bucket: "mixed" })).then(
              () => true,
              () => false,
            ),
          Boolean,
        );
      }
      // One row for both: the database holds the bucket once.
      const [row] = await sql`SELECT count(*)::int AS n FROM buckets WHERE name = 'mixed'`;
      assertEquals(row.n, 1);
    });

    await t.step("objects written on any node are read on all three", async () => {
      const puts: [ClusterNodeProcess, string][] = [[a, "from-a"], [b, "from-b"], [c, "from-c"]];
      for (const [writer, key] of puts) {
        await s3Client(writer.server).send(
          new PutObjectCommand({ Bucket: "mixed", Key: key, Body: `body of ${key}` }),
        );
        const written = Date.now();
        for (const n of nodes) {
          // Polled every 10 ms to time it.
          const until = written + 20_000;
          while ((await read(n, key)) !== `body of ${key}`) {
            if (Date.now() > until) throw new Error(`${key} not on ${n.id}`);
            await new Promise((r) => setTimeout(r, 10));
          }
        }
        console.log(`${key} read on all three nodes ${Date.now() - written} ms after its PUT`);
      }
      // Written on the database's nodes: COMPLETED once the third has it and both hold the bytes.
      for (const key of ["from-a", "from-b"]) {
        await eventually(
          `${key} COMPLETED`,
          () =>
            s3Client(a.server).send(new HeadObjectCommand({ Bucket: "mixed", Key: key }))
              .then((h) => h.ReplicationStatus),
          (s) => s === "COMPLETED",
        );
      }
      // One node of the database sent each (the lowest id alive): one replicated write on c.
      for (const key of ["from-a", "from-b"]) {
        const { json } = await adminApi(
          c.server,
          "GET",
          `/audit?bucket=mixed&key_prefix=${key}&limit=1000`,
        );
        const received = (json!.entries as { principal: string }[])
          .filter((e) => e.principal.startsWith("node:")).map((e) => e.principal);
        assertEquals(received, ["node:node-a"], key);
      }
      const head = await s3Client(c.server).send(
        new HeadObjectCommand({ Bucket: "mixed", Key: "from-a" }),
      );
      assertEquals(head.ReplicationStatus, "REPLICA");
      // The third node's object is one version row in the database.
      const [row] = await sql`
        SELECT count(*)::int AS n FROM versions WHERE bucket = 'mixed' AND key = 'from-c'`;
      assertEquals(row.n, 1);
    });

    await t.step("a deletion on the node of its own reaches the database", async () => {
      await s3Client(c.server).send(new DeleteObjectCommand({ Bucket: "mixed", Key: "from-a" }));
      for (const n of [a, b]) {
        await eventually(
          `from-a gone on ${n.id}`,
          () => read(n, "from-a"),
          (x) => x === "NoSuchKey",
        );
      }
      await s3Client(a.server).send(new DeleteObjectCommand({ Bucket: "mixed", Key: "from-c" }));
      await eventually(`from-c gone on c`, () => read(c, "from-c"), (x) => x === "NoSuchKey");
    });

    await t.step("users made on either side sign on the other", async () => {
      const onB = await createUser(b.server, "bea");
      const onC = await createUser(c.server, "cid");
      const signs = (n: ClusterNodeProcess, u: TestUser) =>
        userClient(n, u).send(new ListBucketsCommand({})).then(() => "ok", (e) => String(e.name));
      for (const [n, u] of [[c, onB], [a, onC], [b, onC]] as const) {
        await eventually(`${u.name} on ${n.id}`, () => signs(n, u), (x) => x === "ok");
      }
    });

    await t.step("a directory mapping put on a node of the database applies on all", async () => {
      // a reads its cached mappings first, so the change on b is one a must read again.
      assertEquals((await adminApi(a.server, "GET", "/ldap")).json!.total, 0);
      const put = await adminApi(b.server, "PUT", "/ldap/groups/engineers", { is_admin: true });
      assertEquals(put.status, 200);
      for (const n of [a, c]) {
        await eventually(
          `the mapping on ${n.id}`,
          () => adminApi(n.server, "GET", "/ldap/groups/engineers"),
          (r) => r.json?.is_admin === true,
        );
      }
    });
  } finally {
    await stopAll(nodes);
    await pg.dispose();
    await slapd.dispose();
  }
});
