// What the key-rotation tests start from: user "u1" (alice) holding KEYOLD / old-secret, sealed
// with a fresh master key, and her keys' rotation to KEYNEW / new-secret.
import type { SqliteMetaStore } from "../meta/sqlite.ts";
import { MasterKey } from "./master_key.ts";
import { SecretSealer } from "./secrets.ts";

export async function userWithOldKey(meta: SqliteMetaStore, createdAt: number) {
  const sealer = new SecretSealer(new MasterKey(crypto.getRandomValues(new Uint8Array(32))));
  await meta.createUser({
    id: "u1",
    name: "alice",
    description: "",
    email: "",
    accessKey: "KEYOLD",
    sealedSecret: sealer.seal("old-secret", "u1"),
    enabled: true,
    createdAt,
    keyCreatedAt: createdAt,
    bucketAccess: [],
  });
  /** Commits the rotation, its time stamp `keyCreatedAt`. */
  const rotate = async (keyCreatedAt: number) => {
    const user = (await meta.getUser({ id: "u1" }))!;
    await meta.updateUser({
      ...user,
      accessKey: "KEYNEW",
      sealedSecret: sealer.seal("new-secret", "u1"),
      keyCreatedAt,
    });
  };
  return { sealer, rotate };
}
