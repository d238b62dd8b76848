import { assertEquals } from "../../../tests/integration/assert.ts";
import { escapeFilterValue, fillFilter, firstRdnValue } from "./escape.ts";

Deno.test("filter values are escaped per RFC 4515", () => {
  assertEquals(escapeFilterValue("alice"), "alice");
  assertEquals(escapeFilterValue("*)(uid=*"), "\\2a\\29\\28uid=\\2a");
  assertEquals(escapeFilterValue("a\\b\0c"), "a\\5cb\\00c");
  assertEquals(
    fillFilter("(&(uid={username})(member={dn}))", { username: "x*", dn: "cn=a\\,b,dc=x" }),
    "(&(uid=x\\2a)(member=cn=a\\5c,b,dc=x))",
  );
});

Deno.test("the first RDN value of a DN, unescaped", () => {
  assertEquals(firstRdnValue("CN=Sales,OU=Groups,DC=corp"), "Sales");
  assertEquals(firstRdnValue("cn=R\\2cD,ou=x"), "R,D");
  assertEquals(firstRdnValue("cn=A\\, B+uid=x,dc=y"), "A, B");
});
