// Pins of policy principals: a policy stored before pins existed is pinned at first use, to the
// users that have the names then, and stays pinned until its text changes.
import { assertEquals } from "../../tests/integration/assert.ts";
import { SqliteMetaStore } from "../meta/sqlite.ts";
import { parseBucketPolicy } from "./policy.ts";
import { pinPrincipals, principalIds } from "./policy_principals.ts";
import { AccessControl } from "./access.ts";

function user(id: string, name: string) {
  return {
    id,
    name,
    description: "",
    email: "",
    accessKey: `KEY${id}`,
    sealedSecret: "",
    enabled: true,
    createdAt: 0,
    keyCreatedAt: 0,
    bucketAccess: [],
  };
}

const BUCKET = {
  name: "b",
  owner: "o",
  createdAt: 0,
  region: "r",
  versioning: "",
  objectLock: false,
} as const;

function policyText(names: string[]): string {
  return JSON.stringify({
    Statement: [{
      Effect: "Allow",
      Principal: { AWS: names.map((n) => `arn:aws:iam::user/${n}`) },
      Action: "s3:GetObject",
      Resource: "arn:aws:s3:::b/*",
    }],
  });
}

Deno.test("policy principals: an unpinned policy is pinned at first use and stays pinned", async () => {
  const meta = new SqliteMetaStore(":memory:");
  try {
    await meta.createBucket(BUCKET);
    await meta.createUser(user("id-1", "alice"));
    const text = policyText(["alice", "ghost"]);
    await meta.putBucketConfig("b", "policy", text); // as an earlier version stored it
    const pins = () => principalIds(meta, "b", text, parseBucketPolicy(text, "b"));
    assertEquals(await pins(), { alice: "id-1" }, "a name no user has matches nobody");
    await meta.deleteUser("id-1");
    await meta.createUser(user("id-2", "alice"));
    assertEquals(await pins(), { alice: "id-1" }, "still the user of the first use");
    const changed = policyText(["alice"]);
    assertEquals(
      await principalIds(meta, "b", changed, parseBucketPolicy(changed, "b")),
      { alice: "id-2" },
      "another text is pinned anew",
    );
    await meta.putBucketConfig("b", "policy-principals", "{not json");
    assertEquals(await pins(), { alice: "id-2" }, "unreadable pins are made anew");
  } finally {
    await meta.close();
  }
});

Deno.test("policy principals: a parse that read the pins before they were made anew is not cached", async () => {
  const store = new SqliteMetaStore(":memory:");
  let slowPins: (() => void) | undefined;
  // The first read of the pins waits until the test lets it go.
  const meta = new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      if (name !== "getBucketConfig") return value.bind(target);
      return async (...args: unknown[]) => {
        const read = await value.apply(target, args);
        if (args[1] === "policy-principals" && !slowPins) {
          await new Promise<void>((r) => slowPins = r);
        }
        return read;
      };
    },
  });
  try {
    await store.createBucket(BUCKET);
    await store.createUser(user("id-1", "alice"));
    const text = policyText(["alice"]);
    await pinPrincipals(store, "b", text, parseBucketPolicy(text, "b"));
    await store.putBucketConfig("b", "policy", text);
    const access = new AccessControl(meta);
    const first = access.policy("b");
    while (!slowPins) await new Promise((r) => setTimeout(r, 5));
    // alice is deleted and made again, and the same policy text is PUT: pinned to the new alice.
    await store.deleteUser("id-1");
    await store.createUser(user("id-2", "alice"));
    await pinPrincipals(store, "b", text, parseBucketPolicy(text, "b"));
    access.forget("b");
    slowPins();
    assertEquals((await first)?.userIds, { alice: "id-1" }, "the parse that began before");
    assertEquals((await access.policy("b"))?.userIds, { alice: "id-2" }, "a later request");
  } finally {
    await store.close();
  }
});
