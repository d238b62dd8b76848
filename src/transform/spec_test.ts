// Output keys of rules and job requests: prefixes, extensions of converted outputs, matching.
import { assertEquals } from "../../tests/integration/assert.ts";
import { parseJobOutput, parseRules, ruleMatches, ruleOutputKey, withExtension } from "./spec.ts";

Deno.test("output keys: the part after the rule's prefix, the converted format's extension", () => {
  const [rule] = parseRules({
    rules: [{
      id: "t",
      prefix: "in/",
      actions: [{ convert: { format: "jpeg" } }],
      output: { prefix: "out/" },
    }],
  });
  assertEquals(ruleOutputKey(rule, "in/a/b.png"), "out/a/b.jpg");
  assertEquals(withExtension("dir.v2/photo", "webp"), "dir.v2/photo.webp");
  assertEquals(withExtension(".hidden", "png"), ".hidden.png");
  assertEquals(withExtension("a.png", undefined), "a.png");
  assertEquals(ruleMatches(rule, "in/x.png", "ObjectCreated:Copy"), true);
  assertEquals(ruleMatches(rule, "other/x.png", "ObjectCreated:Put"), false);
  assertEquals(ruleMatches(rule, "in/x.png", "ObjectRemoved:Delete"), false);
  const source = { bucket: "b", key: "a.png" };
  assertEquals(parseJobOutput({ prefix: "t/" }, source, []), { bucket: "b", key: "t/a.png" });
  assertEquals(parseJobOutput({ bucket: "c" }, source, []), { bucket: "c", key: "a.png" });
});
