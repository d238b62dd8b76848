import { assertEquals } from "../../../tests/integration/assert.ts";
import { loadLdapConfig } from "./config.ts";
import { type Directory, DirectoryError, type DirectoryUser } from "./directory.ts";
import { LdapService, mergeAccess } from "./service.ts";
import { ldapSignIn, SignInThrottled } from "./sign_in.ts";
import { SignInLimiter } from "../sign_in_limiter.ts";
import type { LdapMapping, MetaStore } from "../../meta/store.ts";

Deno.test("mapped access: none wins, read and write add up", () => {
  assertEquals(
    mergeAccess([
      { bucket: "a", permission: "read" },
      { bucket: "a", permission: "write" },
      { bucket: "b", permission: "readwrite" },
      { bucket: "b", permission: "none" },
      { bucket: "c", permission: "read" },
    ]),
    [
      { bucket: "a", permission: "readwrite" },
      { bucket: "b", permission: "none" },
      { bucket: "c", permission: "read" },
    ],
  );
});

/** A directory that counts its calls and knows one user. */
function fakeDirectory(user: DirectoryUser & { password: string }) {
  const calls = { signIn: 0, lookup: 0, down: false };
  const directory = {
    signIn(name: string, password: string) {
      calls.signIn++;
      if (calls.down) return Promise.reject(new DirectoryError("unavailable", "down"));
      if (name.toLowerCase() !== "alice" || password !== user.password) {
        return Promise.reject(new DirectoryError("invalid", "no"));
      }
      return Promise.resolve(user);
    },
    lookup() {
      calls.lookup++;
      if (calls.down) return Promise.reject(new DirectoryError("unavailable", "down"));
      return Promise.resolve(user);
    },
  } as unknown as Directory;
  return { directory, calls };
}

function service(directory: Directory, now: () => number, mappings: LdapMapping[] = []) {
  const config = loadLdapConfig((n) =>
    ({
      STORE_LDAP_ENABLED: "true",
      STORE_LDAP_URL: "ldap://x",
      STORE_LDAP_BASE_DN: "dc=x",
      STORE_LDAP_CACHE_TTL: "10",
    })[n]
  );
  const meta = { listLdapMappings: () => Promise.resolve(mappings) } as unknown as MetaStore;
  return new LdapService(config, directory, meta, { maxFailures: 2, windowMs: 60_000 }, now);
}

Deno.test("sign-ins are cached for the TTL as a hash; groups refreshed after it", async () => {
  let now = 1_000_000;
  const user = {
    dn: "uid=alice",
    email: "",
    displayName: "Alice",
    groups: ["eng"],
    disabled: false,
    password: "pw",
  };
  const { directory, calls } = fakeDirectory(user);
  const ldap = service(directory, () => now, [
    {
      kind: "group",
      name: "eng",
      bucketAccess: [{ bucket: "b", permission: "read" }],
      isAdmin: false,
    },
  ]);
  await ldap.signIn("Alice", "pw");
  await ldap.signIn("alice", "pw");
  assertEquals(calls.signIn, 1);
  // A different password is checked at the directory.
  await ldap.signIn("alice", "other").catch(() => {});
  assertEquals(calls.signIn, 2);
  const identity = await ldap.identity("alice");
  assertEquals(calls.lookup, 0);
  assertEquals((await ldap.principal(identity!)).bucketAccess, [{
    bucket: "b",
    permission: "read",
  }]);
  now += 11_000;
  user.groups = [];
  const fresh = await ldap.identity("alice");
  assertEquals([calls.lookup, fresh!.groups], [1, []]);
  assertEquals((await ldap.principal(fresh!)).bucketAccess, []);
  // The directory down past the TTL: the last known identity serves.
  now += 11_000;
  calls.down = true;
  assertEquals((await ldap.identity("alice"))!.dn, "uid=alice");
  assertEquals(
    (await ldap.identity("bob", { dn: "uid=bob", groups: ["eng"] }))!.groups,
    ["eng"],
  );
});

Deno.test("failed sign-ins are limited per user name across addresses", async () => {
  const { directory } = fakeDirectory({
    dn: "uid=alice",
    email: "",
    displayName: "",
    groups: [],
    disabled: false,
    password: "pw",
  });
  const ldap = service(directory, Date.now);
  const addresses = new SignInLimiter({ maxFailures: 100, windowMs: 60_000 });
  for (const client of ["10.0.0.1", "10.0.0.2"]) {
    await ldapSignIn(ldap, addresses, client, { username: "alice", password: "x" }).catch(() => {});
  }
  let throttled = false;
  try {
    await ldapSignIn(ldap, addresses, "10.0.0.3", { username: "ALICE", password: "pw" });
  } catch (err) {
    throttled = err instanceof SignInThrottled;
  }
  assertEquals(throttled, true);
  // Another name from the same addresses is not affected.
  await ldapSignIn(ldap, addresses, "10.0.0.1", { username: "bob", password: "x" }).catch((e) => {
    assertEquals(e instanceof DirectoryError, true);
  });
});

Deno.test("mappings are read again a second after the last read, and at once when told", async () => {
  let now = 1_000_000;
  let reads = 0;
  const stored: LdapMapping[] = [];
  const config = loadLdapConfig((n) =>
    ({ STORE_LDAP_ENABLED: "true", STORE_LDAP_URL: "ldap://x", STORE_LDAP_BASE_DN: "dc=x" })[n]
  );
  const meta = {
    listLdapMappings: () => {
      reads++;
      return Promise.resolve([...stored]);
    },
  } as unknown as MetaStore;
  const { directory } = fakeDirectory({
    dn: "uid=a",
    email: "",
    displayName: "A",
    groups: [],
    disabled: false,
    password: "pw",
  });
  const ldap = new LdapService(config, directory, meta, { maxFailures: 2, windowMs: 1 }, () => now);
  assertEquals(await ldap.mappings(), []);
  // Another server on the same database adds one: seen once the second is over.
  stored.push({ kind: "group", name: "eng", bucketAccess: [], isAdmin: true });
  now += 999;
  assertEquals(await ldap.mappings(), []);
  now += 1;
  assertEquals((await ldap.mappings()).length, 1);
  assertEquals(reads, 2);
  // Taken from another node: read again at once.
  stored.length = 0;
  ldap.mappingsChanged();
  assertEquals(await ldap.mappings(), []);
  assertEquals(reads, 3);
});
