import { assertEquals } from "../../tests/integration/assert.ts";
import { S3Error } from "../http/errors.ts";
import { parseReplicationConfiguration, replicationConfigurationXml, ruleFor } from "./rules.ts";

const doc = (rules: string) =>
  `<ReplicationConfiguration><Role>r</Role>${rules}</ReplicationConfiguration>`;
const rule = (id: string, inner: string, dest = "dst", status = "Enabled") =>
  `<Rule><ID>${id}</ID><Status>${status}</Status>${inner}` +
  `<Destination><Bucket>arn:aws:s3:::${dest}</Bucket></Destination></Rule>`;

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as S3Error).code;
  }
  return "none";
}

Deno.test("replication rules: the matching rule of highest priority, Disabled ones excluding", () => {
  const config = parseReplicationConfiguration(doc(
    rule(
      "docs",
      "<Priority>2</Priority><Filter><Prefix>docs/</Prefix></Filter>" +
        "<DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication>",
    ) +
      rule(
        "ops",
        "<Priority>1</Priority><Filter><And><Prefix></Prefix><Tag><Key>team</Key>" +
          "<Value>ops</Value></Tag></And></Filter>",
        "other",
      ) +
      rule(
        "private",
        "<Priority>3</Priority><Filter><Prefix>docs/private/</Prefix></Filter>",
        "dst",
        "Disabled",
      ),
  ));
  assertEquals(ruleFor(config, { key: "docs/a" })?.id, "docs");
  assertEquals(ruleFor(config, { key: "docs/a" })?.deleteMarkers, true);
  assertEquals(ruleFor(config, { key: "docs/a", tags: { team: "ops" } })?.id, "docs");
  assertEquals(ruleFor(config, { key: "x", tags: { team: "ops" } })?.destination, "other");
  assertEquals(ruleFor(config, { key: "x", tags: { team: "dev" } }), undefined);
  assertEquals(ruleFor(config, { key: "docs/private/p" }), undefined);
  assertEquals(ruleFor(config, { key: "x" }), undefined);
  // What GetBucketReplication answers reads back as the same configuration.
  const again = parseReplicationConfiguration(
    `<ReplicationConfiguration>${replicationConfigurationXml(config)}</ReplicationConfiguration>`,
  );
  assertEquals(again, config);
});

Deno.test("replication rules: a legacy Prefix rule and the refusals", () => {
  const legacy = parseReplicationConfiguration(doc(rule("l", "<Prefix>logs/</Prefix>")));
  assertEquals([ruleFor(legacy, { key: "logs/1" })?.id, ruleFor(legacy, { key: "x" })], [
    "l",
    undefined,
  ]);
  assertEquals(legacy.rules[0].deleteMarkers, false);
  assertEquals(code(() => parseReplicationConfiguration(doc(""))), "MalformedXML");
  assertEquals(
    code(() => parseReplicationConfiguration(doc(rule("a", "") + rule("a", "")))),
    "InvalidArgument",
  );
  assertEquals(
    code(() =>
      parseReplicationConfiguration(
        doc(rule("a", "<Priority>1</Priority>") + rule("b", "<Priority>1</Priority>")),
      )
    ),
    "InvalidArgument",
  );
  assertEquals(
    code(() => parseReplicationConfiguration(doc(rule("a", "<Prefix>x</Prefix><Filter/>")))),
    "MalformedXML",
  );
  assertEquals(
    code(() =>
      parseReplicationConfiguration(
        doc(
          "<Rule><Status>Enabled</Status><Destination><Bucket>dst</Bucket></Destination></Rule>",
        ),
      )
    ),
    "InvalidArgument",
  );
  assertEquals(
    code(() => parseReplicationConfiguration(doc(rule("a", "", "dst", "On")))),
    "MalformedXML",
  );
  assertEquals(code(() => parseReplicationConfiguration("<Other/>")), "MalformedXML");
});
