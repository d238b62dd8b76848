// The webhook target against a real HTTP receiver (Deno.serve on a free port).
import { WebhookTarget } from "../../src/events/targets/webhook.ts";
import { freePort } from "../services/process.ts";
import { assert, assertEquals } from "./assert.ts";
import {
  assertDeliveredInOrder,
  assertRejectsWithin,
  eventMessage,
  reportMeasurements,
  sendSequentially,
} from "./targets_helpers.ts";

interface Received {
  body: string;
  authorization: string | null;
  contentType: string | null;
}

Deno.test("webhook target", async (t) => {
  const received: Received[] = [];
  let answer = 200;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/redirect") {
      return new Response(null, { status: 307, headers: { location: "/hook" } });
    }
    received.push({
      body: await req.text(),
      authorization: req.headers.get("authorization"),
      contentType: req.headers.get("content-type"),
    });
    return new Response(null, { status: answer });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  const target = new WebhookTarget({ id: "w1", url: `${base}/hook`, authToken: "s3cret" });
  try {
    await t.step("POSTs each message as JSON with the bearer token, in order", async () => {
      const latencies = await sendSequentially(target, 0, 200);
      assertDeliveredInOrder(received.map((r) => r.body), 0, 200);
      assertEquals(received[0].authorization, "Bearer s3cret");
      assertEquals(received[0].contentType, "application/json");
      reportMeasurements("HTTP receiver (Deno.serve)", [0], 0, latencies);
    });

    await t.step("a non-2xx answer fails the send", async () => {
      answer = 503;
      const message = await assertRejectsWithin(target.send(eventMessage(300)), 2_000);
      assert(/503/.test(message), message);
      answer = 200;
    });

    await t.step("a redirect is not followed and fails the send", async () => {
      received.length = 0;
      const redirected = new WebhookTarget({ id: "w2", url: `${base}/redirect` });
      const message = await assertRejectsWithin(redirected.send(eventMessage(400)), 2_000);
      assert(/307/.test(message), message);
      assertEquals(received.length, 0);
    });

    await t.step("a receiver that is down fails the send at once", async () => {
      const port = await freePort();
      const down = new WebhookTarget({ id: "w3", url: `http://127.0.0.1:${port}/hook` });
      await assertRejectsWithin(down.send(eventMessage(500)), 2_000, "webhook receiver down");
    });

    await t.step("close: later sends reject", async () => {
      await target.close();
      const message = await assertRejectsWithin(target.send(eventMessage(600)), 100);
      assert(/closed/.test(message), message);
    });
  } finally {
    await target.close();
    await server.shutdown();
  }
});
