// HTTPS on the server's own listener (STORE_TLS_CERT/STORE_TLS_KEY) with a certificate made in
// the test: the SDK and the aws cli trust the test CA; SIGHUP swaps the certificate for new
// connections while an open keep-alive connection keeps working. SSE-C keys are refused over
// plain HTTP unless allowed, or unless a trusted proxy says it took the request over HTTPS.
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { Agent } from "node:https";
import { join } from "node:path";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { waitForLog } from "./storage_helpers.ts";
import { signedFetch } from "./signer.ts";
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  randomBytes,
  REGION,
  s3Client,
  type TestServer,
  withServer,
} from "./server.ts";
import { makeTestCa, presentedName } from "./tls_certs.ts";

function httpsClient(server: TestServer, ca: string): S3Client {
  return new S3Client({
    endpoint: server.url,
    region: REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: ADMIN_USER, secretAccessKey: ADMIN_PASSWORD },
    maxAttempts: 1,
    requestHandler: { httpsAgent: new Agent({ ca }) },
  });
}

function customerKey(): Record<string, string> {
  const key = randomBytes(32);
  return {
    SSECustomerAlgorithm: "AES256",
    SSECustomerKey: btoa(String.fromCharCode(...key)),
    SSECustomerKeyMD5: createHash("md5").update(key).digest("base64"),
  };
}

/** SSE-C headers of a dialect, for the object itself or (`copy-source-`) a copy source. */
function customerHeaders(prefix: string): Record<string, string> {
  const k = customerKey();
  return {
    [`${prefix}server-side-encryption-customer-algorithm`]: k.SSECustomerAlgorithm,
    [`${prefix}server-side-encryption-customer-key`]: k.SSECustomerKey,
    [`${prefix}server-side-encryption-customer-key-MD5`]: k.SSECustomerKeyMD5,
  };
}

async function aws(server: TestServer, caFile: string, dir: string, ...args: string[]) {
  const out = await new Deno.Command("/usr/bin/aws", {
    args: [...args, "--endpoint-url", server.url, "--ca-bundle", caFile],
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: dir,
      AWS_ACCESS_KEY_ID: ADMIN_USER,
      AWS_SECRET_ACCESS_KEY: ADMIN_PASSWORD,
      AWS_DEFAULT_REGION: REGION,
      AWS_CONFIG_FILE: join(dir, "none"),
      AWS_SHARED_CREDENTIALS_FILE: join(dir, "none"),
      AWS_EC2_METADATA_DISABLED: "true",
      AWS_PAGER: "",
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  assert(out.success, `aws ${args.join(" ")}: ${text(out.stderr)}\n${server.logs().slice(-3000)}`);
  return text(out.stdout);
}

/** Sends one request on an open connection and reads its whole response (Content-Length). */
async function exchange(conn: Deno.Conn, request: string): Promise<string> {
  await conn.write(new TextEncoder().encode(request));
  const buf = new Uint8Array(65536);
  let text = "";
  while (true) {
    const n = await conn.read(buf);
    if (n === null) throw new Error(`connection closed after: ${text}`);
    text += new TextDecoder().decode(buf.subarray(0, n));
    const end = text.indexOf("\r\n\r\n");
    if (end < 0) continue;
    const length = Number(/content-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
    if (text.length >= end + 4 + length) return text;
  }
}

Deno.test("HTTPS: SDK and aws cli with the test CA, SSE-C, a silent client, SIGHUP reload", async () => {
  const ca = await makeTestCa();
  const first = await ca.issue("server-a");
  const second = await ca.issue("server-b");
  const certFile = join(ca.dir, "cert.pem");
  const keyFile = join(ca.dir, "key.pem");
  await Deno.copyFile(first.certFile, certFile);
  await Deno.copyFile(first.keyFile, keyFile);
  const caPem = await Deno.readTextFile(ca.caFile);
  try {
    await withServer(async (server) => {
      assertMatch(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const sdk = httpsClient(server, caPem);
      const body = randomBytes(100_000);
      const key = customerKey();
      await aws(server, ca.caFile, ca.dir, "s3", "mb", "s3://tls");
      await sdk.send(new PutObjectCommand({ Bucket: "tls", Key: "x", Body: body, ...key }));
      const got = await sdk.send(new GetObjectCommand({ Bucket: "tls", Key: "x", ...key }));
      assertEquals(new Uint8Array(await got.Body!.transformToByteArray()), body);

      const up = join(ca.dir, "up.bin");
      const down = join(ca.dir, "down.bin");
      await Deno.writeFile(up, body);
      await aws(server, ca.caFile, ca.dir, "s3", "cp", up, "s3://tls/cli.bin");
      await aws(server, ca.caFile, ca.dir, "s3", "cp", "s3://tls/cli.bin", down);
      assertEquals(await Deno.readFile(down), body);
      assertMatch(await aws(server, ca.caFile, ca.dir, "s3", "ls", "s3://tls/"), /cli\.bin/);

      // A keep-alive connection opened before the reload.
      const conn = await Deno.connectTls({
        hostname: "127.0.0.1",
        port: server.port,
        caCerts: [caPem],
      });
      const probe = `GET /no-such-bucket HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\n\r\n`;
      assertMatch(await exchange(conn, probe), /^HTTP\/1\.1 (403|404)/);
      assertEquals(await presentedName(server.port), "server-a");

      await Deno.copyFile(second.certFile, certFile);
      await Deno.copyFile(second.keyFile, keyFile);
      Deno.kill(server.pid, "SIGHUP");
      await waitForLog(server, "TLS certificate reloaded");
      assertEquals(await presentedName(server.port), "server-b");
      assertMatch(await exchange(conn, probe), /^HTTP\/1\.1 (403|404)/, "old connection");
      conn.close();
      const again = await sdk.send(new GetObjectCommand({ Bucket: "tls", Key: "x", ...key }));
      assertEquals(new Uint8Array(await again.Body!.transformToByteArray()), body);

      // A client that never starts the handshake does not hold up others (see the README's TLS
      // section: Deno keeps its socket until the client goes away).
      const silent = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
      await new Promise((r) => setTimeout(r, 2500)); // past STORE_HEADER_TIMEOUT
      const during = await sdk.send(new GetObjectCommand({ Bucket: "tls", Key: "x", ...key }));
      assertEquals(new Uint8Array(await during.Body!.transformToByteArray()), body);
      silent.close();

      // Broken files: the reload is refused and the certificate in use stays.
      await Deno.writeTextFile(certFile, "not a certificate\n");
      Deno.kill(server.pid, "SIGHUP");
      await waitForLog(server, "TLS certificate not reloaded");
      assertEquals(await presentedName(server.port), "server-b");
      sdk.destroy();
    }, { env: { STORE_TLS_CERT: certFile, STORE_TLS_KEY: keyFile, STORE_HEADER_TIMEOUT: "2" } });
  } finally {
    await Deno.remove(ca.dir, { recursive: true });
  }
});

Deno.test("SSE-C over plain HTTP is refused (both dialects, copy sources) unless allowed", async () => {
  const refused = async (res: Response) => {
    const text = await res.text();
    assertEquals(res.status, 400, text);
    assertMatch(text, /<Code>InvalidRequest<\/Code>/);
    assertMatch(text, /must be made over a secure connection/);
  };
  await withServer(async (server) => {
    const sdk = s3Client(server);
    await signedFetch(server, { method: "PUT", path: "/plain", dialect: "amz" });
    const err = await sdk.send(
      new PutObjectCommand({ Bucket: "plain", Key: "k", Body: "x", ...customerKey() }),
    ).then(() => undefined, (e) => e as { name: string; message: string });
    assertEquals(err?.name, "InvalidRequest");
    await refused(
      await signedFetch(server, {
        method: "PUT",
        path: "/plain/k",
        dialect: "amz",
        body: "x",
        headers: customerHeaders("x-amz-"),
      }),
    );
    await refused(
      await signedFetch(server, {
        method: "PUT",
        path: "/plain/k",
        body: "x",
        headers: customerHeaders("x-store-"),
      }),
    );
    await refused(
      await signedFetch(server, {
        method: "PUT",
        path: "/plain/copy",
        dialect: "amz",
        headers: { "x-amz-copy-source": "/plain/k", ...customerHeaders("x-amz-copy-source-") },
      }),
    );
    // Without STORE_TRUST_PROXY a client's own X-Forwarded-Proto changes nothing.
    await refused(
      await signedFetch(server, {
        method: "PUT",
        path: "/plain/k",
        dialect: "amz",
        body: "x",
        headers: { "x-forwarded-proto": "https", ...customerHeaders("x-amz-") },
      }),
    );
    sdk.destroy();
  });
  await withServer(async (server) => {
    await signedFetch(server, { method: "PUT", path: "/proxied", dialect: "amz" });
    const put = await signedFetch(server, {
      method: "PUT",
      path: "/proxied/k",
      dialect: "amz",
      body: "x",
      headers: { "x-forwarded-proto": "https", ...customerHeaders("x-amz-") },
    });
    assertEquals(put.status, 200, await put.text());
    await refused(
      await signedFetch(server, {
        method: "PUT",
        path: "/proxied/k",
        dialect: "amz",
        body: "x",
        headers: { "x-forwarded-proto": "http", ...customerHeaders("x-amz-") },
      }),
    );
  }, { env: { STORE_TRUST_PROXY: "true" } });
});
