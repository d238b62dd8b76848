import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { parseXml } from "../http/xml.ts";
import { readStoredLifecycle, storedLifecycle } from "../object/lifecycle_rules.ts";
import { parseLifecycleConfiguration } from "./lifecycle_xml.ts";
import { lifecycleRulesXml } from "./lifecycle.ts";

const doc = (...rules: string[]) =>
  `<LifecycleConfiguration>${rules.join("")}</LifecycleConfiguration>`;
const rule = (inner: string, status = "Enabled") =>
  `<Rule>${inner}<Status>${status}</Status></Rule>`;
const days = (n: number) => `<Expiration><Days>${n}</Days></Expiration>`;

Deno.test("lifecycle: stored JSON and response XML round trip", () => {
  const rules = parseLifecycleConfiguration(doc(
    rule(
      `<ID>one</ID><Filter><And><Prefix>p/</Prefix><Tag><Key>a</Key><Value>&amp;</Value></Tag>` +
        `<ObjectSizeGreaterThan>5</ObjectSizeGreaterThan></And></Filter>${days(3)}`,
    ),
    rule(
      `<ID>two</ID><Filter><Prefix>q/</Prefix></Filter><NoncurrentVersionExpiration>` +
        `<NoncurrentDays>2</NoncurrentDays><NewerNoncurrentVersions>4</NewerNoncurrentVersions>` +
        `</NoncurrentVersionExpiration><AbortIncompleteMultipartUpload><DaysAfterInitiation>1` +
        `</DaysAfterInitiation></AbortIncompleteMultipartUpload>`,
      "Disabled",
    ),
    rule(`<ID>three</ID><Filter/><Expiration><Date>2024-02-29T00:00:00Z</Date></Expiration>`),
    rule(`<ID>four</ID><Filter><ObjectSizeLessThan>9</ObjectSizeLessThan></Filter>${days(1)}`),
  ));
  assertEquals(readStoredLifecycle(storedLifecycle(rules)), rules);
  const xml = doc(lifecycleRulesXml(rules));
  assertEquals(parseLifecycleConfiguration(xml), rules);
  const root = parseXml(xml, "LifecycleConfiguration");
  assertEquals(Array.isArray(root.Rule) && root.Rule.length, 4);
  const legacy = parseLifecycleConfiguration(doc(rule(`<ID>l</ID><Prefix>x/</Prefix>${days(1)}`)));
  const legacyXml = lifecycleRulesXml(legacy);
  assert(legacyXml.includes("<Prefix>x/</Prefix><Status>"), legacyXml);
  assertEquals(parseLifecycleConfiguration(doc(legacyXml)), legacy);
  assertEquals(
    lifecycleRulesXml(parseLifecycleConfiguration(doc(rule(`<ID>e</ID><Filter/>${days(1)}`)))),
    "<Rule><ID>e</ID><Filter></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>",
  );
});
