// A session asked for with a user's key ends when that key is rotated, also when the request
// and the rotation came so close together that the session was created after the rotation's
// time stamp (the rotation stamps its time before its commit; the session was authenticated
// with the old key in between).
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { SqliteMetaStore } from "../meta/sqlite.ts";
import { Credentials } from "./credentials.ts";
import { userWithOldKey } from "./rotation_fixture.ts";

Deno.test("sessions: rotating the key a session was asked for with ends it, whatever the times", async () => {
  const meta = new SqliteMetaStore(":memory:");
  try {
    const rotatedAt = Date.now();
    const { sealer, rotate } = await userWithOldKey(meta, rotatedAt - 60_000);
    const credentials = new Credentials(
      { user: "admin", password: "admin-secret", generated: false },
      meta,
      sealer,
    );
    const issue = (parentKey: string) =>
      credentials.sessions.issue({
        parentKind: "user",
        parentId: "u1",
        parentKey,
        createdAt: rotatedAt + 5, // after the rotation's stamp
        expiresAt: rotatedAt + 3_600_000,
      });
    const withOld = await issue("KEYOLD");
    assert(await credentials.sessions.lookup(withOld.accessKey), "valid before the rotation");
    // The rotation commits, stamped a moment before the session was created.
    await rotate(rotatedAt);
    assertEquals(await credentials.sessions.lookup(withOld.accessKey), undefined);
    const withNew = await issue("KEYNEW");
    assertEquals(
      (await credentials.sessions.lookup(withNew.accessKey))?.principal.id,
      "u1",
      "a session of the new key",
    );
  } finally {
    await meta.close();
  }
});
