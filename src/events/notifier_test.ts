// Two notification configurations of one bucket stored at once: the one stored last is the one
// the notifier routes by and answers, whichever commit is answered first (commits are answered
// when their WAL flush ends, and flushes overlap).
import { assertEquals } from "../../tests/integration/assert.ts";
import { SqliteMetaStore } from "../meta/sqlite.ts";
import type { MetaStore } from "../meta/store.ts";
import { Notifier } from "./notifier.ts";
import type { NotifyConfig } from "./notify_config.ts";
import { Signal } from "./signal.ts";

const ORIGIN = { principal: "p", sourceIp: "127.0.0.1", requestId: "r" };

function configNamed(id: string): NotifyConfig {
  return {
    dialect: "amz",
    rules: [{
      kind: "queue",
      id,
      events: ["ObjectCreated:*"],
      arn: "arn:aws:sqs:us-east-1:q:webhook",
      target: { kind: "webhook", id: "q" },
    }],
  };
}

Deno.test("notifier: concurrent configurations end on the one stored last, in cache and database", async () => {
  const dir = await Deno.makeTempDir({ prefix: "notifier-" });
  const store = new SqliteMetaStore(`${dir}/meta.db`);
  // The first configuration's commit is answered 100 ms late, as a slow flush would.
  const meta = new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      if (name !== "putBucketConfig") return value.bind(target);
      return async (...args: unknown[]) => {
        const stored = value.apply(target, args);
        if (String(args[2]).includes("FIRST")) await new Promise((r) => setTimeout(r, 100));
        return await stored;
      };
    },
  }) as MetaStore;
  try {
    await store.createBucket({
      name: "b",
      owner: "o",
      createdAt: Date.now(),
      region: "us-east-1",
      versioning: "",
      objectLock: false,
    });
    const notifier = new Notifier({
      meta,
      region: "us-east-1",
      targets: [],
      allow: {},
      queueLimit: 1000,
      retentionMs: 60_000,
      retryMaxMs: 1000,
      wake: new Signal(),
    });
    await Promise.all([
      notifier.configure("b", configNamed("FIRST"), ORIGIN),
      notifier.configure("b", configNamed("SECOND"), ORIGIN),
    ]);
    const stored = JSON.parse((await store.getBucketConfig("b", "notification"))!);
    const cached = await notifier.config("b");
    assertEquals([stored.rules[0].id, cached?.rules[0].id], ["SECOND", "SECOND"]);
    await notifier.stop();
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
