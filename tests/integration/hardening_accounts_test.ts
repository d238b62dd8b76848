// Sign-ins and policy principals (issue 9 item 11): failed admin Basic and token sign-ins are
// limited per client address (429 with Retry-After); a policy principal names the user that had
// the name when the policy was stored, so a deleted and re-created user inherits nothing.
import { assert, assertEquals } from "./assert.ts";
import {
  adminApi,
  as,
  createBucket,
  createUser,
  expectDenied,
  expectError,
  expectStatus,
  objectPath,
  policyWords,
  putOk,
  putPolicy,
  setPolicy,
} from "./access_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, withServer } from "./server.ts";

function basic(password: string): Record<string, string> {
  return { authorization: "Basic " + btoa(`${ADMIN_USER}:${password}`) };
}

Deno.test("hardening: failed sign-ins are limited per client address", async (t) => {
  await withServer(async (server) => {
    const admin = (password: string) =>
      fetch(`${server.url}/admin/users`, { headers: basic(password) });
    const token = (secret: string) =>
      fetch(`${server.url}/api/v1/tokens`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ access_key: ADMIN_USER, secret_key: secret }),
      });

    await t.step(
      "a success clears the count; the limit refuses even the right password",
      async () => {
        for (let i = 0; i < 2; i++) await expectStatus(await admin("wrong"), 401);
        await expectStatus(await admin(ADMIN_PASSWORD), 200, "success below the limit");
        // Admin and token failures count together.
        for (let i = 0; i < 2; i++) await expectStatus(await admin("wrong"), 401);
        await expectStatus(await token("wrong"), 401);
        for (const res of [await admin(ADMIN_PASSWORD), await token(ADMIN_PASSWORD)]) {
          const body = await expectStatus(res, 429, "over the limit");
          assertEquals(JSON.parse(body).error.code, "too_many_attempts");
          const after = Number(res.headers.get("retry-after"));
          assert(after >= 1 && after <= 2, `Retry-After ${after}`);
        }
      },
    );

    await t.step("the window ends and sign-ins work again", async () => {
      await new Promise((r) => setTimeout(r, 2100));
      await expectStatus(await admin(ADMIN_PASSWORD), 200);
      await expectStatus(await token(ADMIN_PASSWORD), 201);
    });

    await t.step("the protocol API is not affected", async () => {
      await expectStatus(await as(server, undefined, "amz")({ method: "GET", path: "/" }), 200);
    });
  }, { env: { STORE_SIGNIN_LIMIT: "3", STORE_SIGNIN_WINDOW: "2" } });
});

Deno.test("hardening: policy principals are pinned to the user, not the name", async (t) => {
  await withServer(async (server) => {
    const root = as(server, undefined, "amz");
    const bucket = "pins";
    const w = policyWords("amz", bucket);
    await createBucket(root, bucket);
    await putOk(root, bucket, "doc.txt");
    const get = (u: Awaited<ReturnType<typeof createUser>>) =>
      as(server, u, "amz")({ method: "GET", path: objectPath(bucket, "doc.txt") });

    await t.step("a re-created user does not inherit the old one's grants", async () => {
      const first = await createUser(server, "pinned");
      const doc = w.doc(w.allow(w.user(first), w.act("GetObject"), w.objArn("*")));
      await setPolicy(root, bucket, doc);
      await expectStatus(await get(first), 200, "the named user");
      assertEquals((await adminApi(server, "DELETE", `/users/${first.accessKey}`)).status, 204);
      const second = await createUser(server, "pinned");
      await expectDenied(await get(second), "the re-created user");
      // The policy still shows the name; storing it again grants the user that has it now.
      const shown = await expectStatus(
        await root({ method: "GET", path: objectPath(bucket), query: [["policy", ""]] }),
        200,
      );
      assert(shown.includes("user/pinned"), shown);
      await setPolicy(root, bucket, doc);
      await expectStatus(await get(second), 200, "after the policy is stored again");
    });

    await t.step("a re-created user does not escape a NotPrincipal Deny either", async () => {
      const keeper = await createUser(server, "keeper", [{ bucket, permission: "read" }]);
      const other = await createUser(server, "other", [{ bucket, permission: "read" }]);
      await setPolicy(
        root,
        bucket,
        {
          ...w.doc(w.deny(w.user(keeper), w.act("GetObject"), w.objArn("*"))),
          Statement: [{
            Effect: "Deny",
            NotPrincipal: w.user(keeper),
            Action: w.act("GetObject"),
            Resource: w.objArn("*"),
          }],
        },
      );
      await expectStatus(await get(keeper), 200, "the exempted user");
      await expectDenied(await get(other), "anyone else");
      assertEquals((await adminApi(server, "DELETE", `/users/${keeper.accessKey}`)).status, 204);
      const again = await createUser(server, "keeper", [{ bucket, permission: "read" }]);
      await expectDenied(await get(again), "the re-created user is not exempt");
    });

    await t.step("a principal naming no user is MalformedPolicy", async () => {
      await expectError(
        await putPolicy(
          root,
          bucket,
          w.doc(w.allow({ AWS: "arn:aws:iam::user/ghost" }, w.act("GetObject"), w.objArn("*"))),
        ),
        "MalformedPolicy",
        400,
      );
    });
  });
});
