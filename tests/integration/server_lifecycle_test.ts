// Start-up and shutdown: generated credentials, configuration errors, graceful SIGTERM.
import { CreateBucketCommand, GetObjectCommand } from "@aws-sdk/client-s3";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { randomBytes, startServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

Deno.test("credentials are generated once, printed once and kept", async () => {
  const first = await startServer({ generatedAdmin: true });
  const dataDir = first.dataDir;
  try {
    await first.stop();
    const printed = first.logs();
    const user = /access key \/ user:\s+(\S+)/.exec(printed)?.[1];
    const password = /secret key \/ password:\s+(\S+)/.exec(printed)?.[1];
    assert(user && password, "credentials printed");
    assertMatch(user, /^STAD[A-Z0-9]{16}$/);
    assertEquals(password.length, 40);
    const saved = await Deno.stat(`${dataDir}/admin-credentials.json`);
    assertEquals((saved.mode ?? 0) & 0o777, 0o600);
    const second = await startServer({ generatedAdmin: true, dataDir });
    try {
      assert(!second.logs().includes("secret key"), "not printed again");
      const res = await signedFetch(second, {
        method: "PUT",
        path: "/kept",
        accessKey: user,
        secret: password,
      });
      assertEquals(res.status, 200);
    } finally {
      await second.stop();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("a bad setting stops the start with a clear message", async () => {
  const dataDir = await Deno.makeTempDir();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN],
    env: { STORE_PORT: "ninety", STORE_DATA_DIR: dataDir },
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(dataDir, { recursive: true });
  assertEquals(out.code, 2);
  assertMatch(
    new TextDecoder().decode(out.stderr),
    /Configuration error: STORE_PORT must be a whole number/,
  );
});

Deno.test("SIGTERM lets an in-flight upload finish, then exits cleanly", async () => {
  const server = await startServer();
  try {
    const { s3Client } = await import("./server.ts");
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "graceful" }));
    const body = randomBytes(8 * 1024 * 1024);
    // A slow upload: the body trickles in while the server is told to stop.
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent >= body.length) return controller.close();
        const n = Math.min(512 * 1024, body.length - sent);
        controller.enqueue(body.slice(sent, sent + n));
        sent += n;
        await new Promise((r) => setTimeout(r, 40));
      },
    });
    const upload = signedFetch(server, {
      method: "PUT",
      path: objectPath("graceful", "slow.bin"),
      payloadHash: "UNSIGNED-PAYLOAD",
      body: stream as unknown as Uint8Array,
    });
    await new Promise((r) => setTimeout(r, 150));
    const stopped = server.stop();
    const res = await upload;
    assertEquals(res.status, 200, await res.text());
    const status = await stopped;
    assertEquals(status.code, 0);
    assertMatch(server.logs(), /"Stopped"/);
    const again = await startServer({ dataDir: server.dataDir });
    try {
      const got = await s3Client(again).send(
        new GetObjectCommand({ Bucket: "graceful", Key: "slow.bin" }),
      );
      assertEquals((await got.Body!.transformToByteArray()).byteLength, body.length);
    } finally {
      await again.stop();
    }
  } finally {
    await Deno.remove(server.dataDir, { recursive: true });
  }
});
