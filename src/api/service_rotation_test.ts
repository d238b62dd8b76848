// A bearer token issued with a user's key ends when that key is rotated, also when the sign-in
// and the rotation came so close together that the token was stored after the rotation committed
// (the rotation stamps its time before it commits; the sign-in checked the old key in between and
// stamped the token after the rotation's time).
import { assertEquals } from "../../tests/integration/assert.ts";
import type { AppDeps } from "../app.ts";
import { Credentials } from "../auth/credentials.ts";
import { userWithOldKey } from "../auth/rotation_fixture.ts";
import { SignInLimiter } from "../auth/sign_in_limiter.ts";
import { SqliteMetaStore } from "../meta/sqlite.ts";
import type { TokenRecord } from "../meta/store.ts";
import { handleServiceApi } from "./service.ts";

Deno.test("tokens: a sign-in that checked the old key as the rotation committed gets no live token", async () => {
  const meta = new SqliteMetaStore(":memory:");
  try {
    const { sealer, rotate } = await userWithOldKey(meta, Date.now() - 60_000);
    let rotateFirst = false;
    // The rotation commits between the sign-in's key check and the token's insert.
    const racing = new Proxy(meta, {
      get(target, prop) {
        if (prop === "createToken") {
          return async (token: TokenRecord) => {
            // Stamped when the rotation began, a moment before this token's time.
            if (rotateFirst) await rotate(token.createdAt - 5);
            return await target.createToken(token);
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const credentials = new Credentials(
      { user: "admin", password: "admin-secret", generated: false },
      meta,
      sealer,
    );
    const deps = {
      layer: { meta: racing },
      credentials,
      config: { tokenTtl: 3600 },
      signIns: new SignInLimiter({ maxFailures: 10, windowMs: 60_000 }),
    } as unknown as AppDeps;
    const call = (method: string, headers: Record<string, string>, body?: unknown) =>
      handleServiceApi(
        new Request("http://store.test/api/v1/tokens", {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
        deps,
        "127.0.0.1",
      );
    const signIn = async (accessKey: string, secret: string) => {
      const res = await call("POST", { "content-type": "application/json" }, {
        access_key: accessKey,
        secret_key: secret,
      });
      assertEquals(res.status, 201);
      return ((await res.json()) as { token: string }).token;
    };
    // A token in use: DELETE answers 204 for a live one, 401 otherwise.
    const live = async (token: string) =>
      (await call("DELETE", { authorization: `Bearer ${token}` })).status;

    assertEquals(await live(await signIn("KEYOLD", "old-secret")), 204);
    rotateFirst = true;
    const raced = await signIn("KEYOLD", "old-secret");
    rotateFirst = false;
    assertEquals(await live(raced), 401, "a token of the rotated key");
    assertEquals(await live(await signIn("KEYNEW", "new-secret")), 204, "the new key's token");
  } finally {
    await meta.close();
  }
});
