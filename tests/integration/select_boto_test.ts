// SelectObjectContent through boto3 (Debian's python3-boto3, installed by
// scripts/install/sigv2.sh): a second client that decodes the event stream and checks every
// message's CRCs, its Stats and Progress events, and errors before and after the first record.
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { assert, assertEquals } from "./assert.ts";
import { runBoto } from "./boto.ts";
import { s3Client, type TestServer, withServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";

const SCRIPT = `
import json, sys, boto3
from botocore.config import Config
from botocore.exceptions import ClientError, EventStreamError
url, key, secret, region = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id=key, aws_secret_access_key=secret,
    region_name=region, config=Config(s3={"addressing_style": "path"},
    retries={"max_attempts": 1}))

def select(key, sql, inp, out={"CSV": {}}, progress=False):
    res = s3.select_object_content(Bucket="bsel", Key=key, Expression=sql, ExpressionType="SQL",
        InputSerialization=inp, OutputSerialization=out,
        RequestProgress={"Enabled": progress})
    got = {"records": "", "stats": None, "progress": 0, "end": False}
    try:
        for event in res["Payload"]:
            if "Records" in event: got["records"] += event["Records"]["Payload"].decode()
            if "Stats" in event: got["stats"] = event["Stats"]["Details"]
            if "Progress" in event: got["progress"] += 1
            if "End" in event: got["end"] = True
    except EventStreamError as e:
        got["streamError"] = e.response["Error"]["Code"]
    return got

out = {}
out["csv"] = select("p.csv", "SELECT name, CAST(age AS INT) + 1 AS next FROM S3Object WHERE age > 20",
    {"CSV": {"FileHeaderInfo": "USE"}})
out["json"] = select("p.jsonl", "SELECT s.name FROM S3Object s WHERE s.age < 40",
    {"JSON": {"Type": "LINES"}}, {"JSON": {"RecordDelimiter": ";"}}, True)
try:
    select("p.csv", "SELECT FROM S3Object", {"CSV": {}})
except ClientError as e:
    out["badSql"] = [e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]]
out["late"] = select("late.csv", "SELECT CAST(_1 AS INT) FROM S3Object", {"CSV": {}})
print(json.dumps(out))
`;

async function boto(server: TestServer): Promise<Record<string, unknown>> {
  return JSON.parse(await runBoto(server, SCRIPT));
}

Deno.test("select: boto3 decodes the event stream", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    assertEquals(
      (await signedFetch(server, { method: "PUT", path: objectPath("bsel") })).status,
      200,
    );
    const put = (Key: string, Body: string) =>
      s3.send(new PutObjectCommand({ Bucket: "bsel", Key, Body }));
    await put("p.csv", "name,age\nann,31\nbob,19\ncid,45\n");
    await put(
      "p.jsonl",
      '{"name":"ann","age":31}\n{"name":"bob","age":19}\n{"name":"cid","age":45}\n',
    );
    const rows = Array.from({ length: 30000 }, (_, i) => String(i)).join("\n");
    await put("late.csv", `${rows}\nnot-a-number\n`);
    const out = await boto(server) as Record<string, Record<string, unknown>>;
    assertEquals(out.csv.records, "ann,32\ncid,46\n");
    assertEquals(out.csv.end, true);
    const stats = out.csv.stats as Record<string, number>;
    assertEquals(stats.BytesScanned, 30);
    assertEquals(stats.BytesReturned, 14);
    assertEquals(out.json.records, '{"name":"ann"};{"name":"bob"};');
    assert((out.json.progress as number) > 0, "Progress events");
    assertEquals(out.badSql as unknown, ["ParseEmptySelect", 400]);
    assertEquals(out.late.streamError, "CastFailed");
    assert((out.late.records as string).startsWith("0\n1\n2\n"), "records before the error");
    assertEquals(out.late.end, false);
  });
});
