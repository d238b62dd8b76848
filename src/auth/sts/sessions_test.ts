import { assertEquals } from "../../../tests/integration/assert.ts";
import { S3Error } from "../../http/errors.ts";
import { ANONYMOUS, type Principal } from "../principal.ts";
import { parseSessionPolicy } from "../policy.ts";
import { checkSessionToken } from "./sessions.ts";

function codeOf(fn: () => void): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof S3Error) return err.code;
    throw err;
  }
  return undefined;
}

Deno.test("session tokens: required, exact, unexpired; refused on long-term keys", () => {
  const user: Principal = { ...ANONYMOUS, kind: "user", id: "u" };
  const session = { ...user, session: { token: "tok", expiresAt: 2000 } };
  assertEquals(codeOf(() => checkSessionToken(user, null, 1000)), undefined);
  assertEquals(codeOf(() => checkSessionToken(user, "tok", 1000)), "InvalidToken");
  assertEquals(codeOf(() => checkSessionToken(session, "tok", 1000)), undefined);
  assertEquals(codeOf(() => checkSessionToken(session, null, 1000)), "InvalidToken");
  assertEquals(codeOf(() => checkSessionToken(session, "tox", 1000)), "InvalidToken");
  assertEquals(codeOf(() => checkSessionToken(session, "tok", 2000)), "ExpiredToken");
});

Deno.test("session policies: no Principal, resources in any bucket", () => {
  const p = parseSessionPolicy(JSON.stringify({
    Version: "2012-10-17",
    Statement: [{ Effect: "Allow", Action: ["s3:GetObject"], Resource: "arn:aws:s3:::a/*" }],
  }));
  assertEquals(p.statements[0].resources, [{ bucket: "a", key: "*" }]);
  assertEquals(
    codeOf(() =>
      parseSessionPolicy(JSON.stringify({
        Statement: [{ Effect: "Allow", Principal: "*", Action: "s3:*", Resource: "*" }],
      }))
    ),
    "MalformedPolicy",
  );
});
