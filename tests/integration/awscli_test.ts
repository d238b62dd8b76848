// The real AWS CLI (Debian's awscli package at /usr/bin/aws) against a real server.
//
// The CLI reads a config file written for the test, not the user's, with its default multipart
// settings (files over 8 MiB go in 8 MiB parts), and path-style addressing forced because the
// server does not serve virtual-hosted buckets on 127.0.0.1. Credentials come from the
// environment; the shared credentials file is an empty temp file and HOME is a temp directory, so
// nothing from the machine's ~/.aws leaks in.
import { createHash } from "node:crypto";
import { join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  randomBytes,
  REGION,
  sha256Hex,
  type TestServer,
  withServer,
} from "./server.ts";

/** The ETag of an object uploaded in parts of `partSize`: MD5 of the part MD5s, then `-n`. */
function multipartEtag(data: Uint8Array, partSize: number): string {
  const all = createHash("md5");
  let n = 0;
  for (let at = 0; at < data.byteLength; at += partSize, n++) {
    all.update(createHash("md5").update(data.subarray(at, at + partSize)).digest());
  }
  return `"${all.digest("hex")}-${n}"`;
}

const AWS = "/usr/bin/aws";

function awsInstalled(): boolean {
  try {
    return Deno.statSync(AWS).isFile;
  } catch {
    return false;
  }
}

const installed = awsInstalled();
if (!installed && Deno.env.get("CI") === "true") {
  throw new Error(`${AWS} is missing; the awscli package is required in CI`);
}

interface Cli {
  /** Runs `aws <args>` and returns stdout; throws with stderr and the server log on failure. */
  run(...args: string[]): Promise<string>;
  dir: string;
}

async function makeCli(server: TestServer): Promise<Cli> {
  const dir = await Deno.makeTempDir({ prefix: "store-awscli-" });
  const home = join(dir, "home");
  await Deno.mkdir(home);
  const config = join(dir, "config");
  await Deno.writeTextFile(
    config,
    "[default]\n" +
      `region = ${REGION}\n` +
      "s3 =\n" +
      "  addressing_style = path\n",
  );
  const credentials = join(dir, "credentials");
  await Deno.writeTextFile(credentials, "");
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: home,
    LANG: "C.UTF-8",
    AWS_ACCESS_KEY_ID: ADMIN_USER,
    AWS_SECRET_ACCESS_KEY: ADMIN_PASSWORD,
    AWS_DEFAULT_REGION: REGION,
    AWS_CONFIG_FILE: config,
    AWS_SHARED_CREDENTIALS_FILE: credentials,
    AWS_PAGER: "",
    AWS_EC2_METADATA_DISABLED: "true",
  };
  return {
    dir,
    async run(...args: string[]): Promise<string> {
      const out = await new Deno.Command(AWS, {
        args: [...args, "--endpoint-url", server.url, "--no-cli-pager"],
        env,
        clearEnv: true,
        cwd: dir,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stdout = new TextDecoder().decode(out.stdout);
      if (!out.success) {
        const stderr = new TextDecoder().decode(out.stderr);
        throw new Error(
          `aws ${args.join(" ")} exited with ${out.code}\nstdout:\n${stdout}\nstderr:\n${stderr}` +
            `\nserver log:\n${server.logs().slice(-4000)}`,
        );
      }
      return stdout;
    },
  };
}

/** Uploads `bytes` as `key`, downloads it again and checks the copy is identical. */
async function roundTrip(cli: Cli, bucket: string, key: string, bytes: Uint8Array) {
  const up = join(cli.dir, "up.bin");
  const down = join(cli.dir, "down.bin");
  await Deno.writeFile(up, bytes);
  await cli.run("s3", "cp", up, `s3://${bucket}/${key}`);
  await cli.run("s3", "cp", `s3://${bucket}/${key}`, down);
  const back = await Deno.readFile(down);
  assertEquals(back.byteLength, bytes.byteLength, `size of ${key} after the round trip`);
  assertEquals(await sha256Hex(back), await sha256Hex(bytes), `bytes of ${key}`);
  await Deno.remove(down);
}

function md5Hex(bytes: Uint8Array): string {
  return createHash("md5").update(bytes).digest("hex");
}

Deno.test({
  name: "aws cli: mb, cp up and down, ls, head-object, rm, rb",
  ignore: !installed,
  fn: () =>
    withServer(async (server) => {
      const cli = await makeCli(server);
      try {
        const bucket = "awscli-bucket";
        const mb = await cli.run("s3", "mb", `s3://${bucket}`);
        assert(mb.includes(`make_bucket: ${bucket}`), `mb output: ${mb}`);

        const small = new TextEncoder().encode("hello from the aws cli\n");
        await roundTrip(cli, bucket, "docs/hello.txt", small);
        const big = randomBytes(20 * 1024 * 1024);
        await roundTrip(cli, bucket, "data/big.bin", big);
        // 200 MiB: 25 parts up, ranged GETs down.
        const huge = randomBytes(200 * 1024 * 1024);
        await roundTrip(cli, bucket, "data/huge.bin", huge);
        const hugeHead = JSON.parse(
          await cli.run("s3api", "head-object", "--bucket", bucket, "--key", "data/huge.bin"),
        );
        assertEquals(hugeHead.ContentLength, huge.byteLength, "ContentLength (200 MiB)");
        assertEquals(hugeHead.ETag, multipartEtag(huge, 8 * 1024 * 1024), "ETag (200 MiB)");
        await cli.run("s3", "rm", `s3://${bucket}/data/huge.bin`);

        const buckets = await cli.run("s3", "ls");
        assert(
          buckets.split("\n").some((l) => l.trim().endsWith(` ${bucket}`)),
          `bucket list: ${buckets}`,
        );

        const docs = await cli.run("s3", "ls", `s3://${bucket}/docs/`);
        const docLines = docs.trim().split("\n");
        assertEquals(docLines.length, 1, `listing of docs/: ${docs}`);
        assert(/\s23 hello\.txt$/.test(docLines[0]), `listing of docs/: ${docs}`);
        const top = await cli.run("s3", "ls", `s3://${bucket}/`);
        assert(/PRE data\//.test(top) && /PRE docs\//.test(top), `top listing: ${top}`);
        const all = await cli.run("s3", "ls", "--recursive", `s3://${bucket}/d`);
        assert(
          /\s20971520 data\/big\.bin/.test(all) && /\s23 docs\/hello\.txt/.test(all),
          `recursive listing: ${all}`,
        );

        const head = JSON.parse(
          await cli.run("s3api", "head-object", "--bucket", bucket, "--key", "data/big.bin"),
        );
        assertEquals(head.ContentLength, big.byteLength, "ContentLength");
        assertEquals(head.ETag, multipartEtag(big, 8 * 1024 * 1024), "ETag");
        const headSmall = JSON.parse(
          await cli.run("s3api", "head-object", "--bucket", bucket, "--key", "docs/hello.txt"),
        );
        assertEquals(headSmall.ContentLength, small.byteLength, "ContentLength (small)");
        assertEquals(headSmall.ETag, `"${md5Hex(small)}"`, "ETag (small)");

        await cli.run("s3", "rm", `s3://${bucket}/docs/hello.txt`);
        await cli.run("s3", "rm", `s3://${bucket}/data/big.bin`);
        const empty = await cli.run("s3", "ls", "--recursive", `s3://${bucket}/`);
        assertEquals(empty.trim(), "", "listing after rm");

        const rb = await cli.run("s3", "rb", `s3://${bucket}`);
        assert(rb.includes(`remove_bucket: ${bucket}`), `rb output: ${rb}`);
        const after = await cli.run("s3", "ls");
        assert(!after.includes(bucket), `bucket list after rb: ${after}`);
      } finally {
        await Deno.remove(cli.dir, { recursive: true }).catch(() => {});
      }
    }),
});

Deno.test({
  name: "aws cli: select-object-content writes the query's records",
  ignore: !installed,
  fn: () =>
    withServer(async (server) => {
      const cli = await makeCli(server);
      try {
        await cli.run("s3", "mb", "s3://clisel");
        const csv = join(cli.dir, "p.csv");
        await Deno.writeTextFile(csv, "name,age\nann,31\nbob,19\ncid,45\n");
        await cli.run("s3", "cp", csv, "s3://clisel/p.csv");
        const out = join(cli.dir, "out.json");
        await cli.run(
          "s3api",
          "select-object-content",
          "--bucket",
          "clisel",
          "--key",
          "p.csv",
          "--expression",
          "SELECT s.name FROM S3Object s WHERE CAST(s.age AS INT) > 30",
          "--expression-type",
          "SQL",
          "--input-serialization",
          '{"CSV": {"FileHeaderInfo": "USE"}}',
          "--output-serialization",
          '{"JSON": {}}',
          out,
        );
        assertEquals(await Deno.readTextFile(out), '{"name":"ann"}\n{"name":"cid"}\n');
      } finally {
        await Deno.remove(cli.dir, { recursive: true }).catch(() => {});
      }
    }),
});
