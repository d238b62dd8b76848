// The nesting-depth scan that runs before any XML parser sees a request document.
import { assert } from "../../tests/integration/assert.ts";
import { withinXmlDepth } from "./xml.ts";

const nest = (n: number, inner = "") => "<a>".repeat(n) + inner + "</a>".repeat(n);

Deno.test("xml depth: counts elements, not self-closing tags, comments, CDATA or declarations", () => {
  assert(withinXmlDepth(nest(32)));
  assert(!withinXmlDepth(nest(33)));
  assert(
    withinXmlDepth(`<?xml version="1.0"?>${nest(31, "<b/><c x='>'/><!-- <d> --><![CDATA[<e>]]>")}`),
  );
  assert(!withinXmlDepth(nest(32, '<b x="/>">')), "a quoted '/>' does not close the tag");
  assert(withinXmlDepth(nest(3), 3));
  assert(!withinXmlDepth(nest(4), 3));
});

Deno.test("xml depth: stray closing tags buy no room", () => {
  assert(!withinXmlDepth("</a>".repeat(100) + nest(40)));
});
