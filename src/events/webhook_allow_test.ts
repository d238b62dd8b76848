import { assertEquals } from "../../tests/integration/assert.ts";
import { parseAllowList, parseIp, webhookRefusal } from "./webhook_allow.ts";

const allowed = async (url: string, list?: string) =>
  (await webhookRefusal(new URL(url), parseAllowList(list))) === undefined;

Deno.test("webhook allow-list: addresses parse in every form", () => {
  assertEquals(parseIp("10.0.0.1"), new Uint8Array([10, 0, 0, 1]));
  assertEquals(parseIp("::ffff:127.0.0.1"), new Uint8Array([127, 0, 0, 1]));
  assertEquals(parseIp("[::1]")?.[15], 1);
  assertEquals(parseIp("fe80::1%eth0")?.[0], 0xfe);
  assertEquals(parseIp("1::2::3"), undefined);
  assertEquals(parseIp("256.1.1.1"), undefined);
});

Deno.test("webhook allow-list: the default refuses internal addresses", async () => {
  for (
    const url of [
      "http://127.0.0.1/",
      "http://localhost:8080/",
      "http://10.2.3.4/",
      "http://172.20.0.1/",
      "http://192.168.1.1/",
      "http://169.254.169.254/latest/meta-data",
      "http://[::1]/",
      "http://[fd00::1]/",
      "http://[::ffff:10.0.0.1]/",
      "http://0.0.0.0/",
      "http://100.64.0.1/",
    ]
  ) assertEquals(await allowed(url), false, url);
  assertEquals(await allowed("http://93.184.216.34/"), true);
  assertEquals(await allowed("http://no-such-host.invalid/"), false);
});

Deno.test("webhook allow-list: names, ranges and `*`", async () => {
  assertEquals(await allowed("http://127.0.0.1:9/", "127.0.0.0/8"), true);
  assertEquals(await allowed("http://localhost/", "127.0.0.1,::1"), true);
  assertEquals(await allowed("http://10.0.0.1/", "127.0.0.0/8"), false);
  assertEquals(await allowed("http://93.184.216.34/", "127.0.0.0/8"), false, "only the list");
  assertEquals(await allowed("http://hooks.internal/", "*.internal"), true);
  assertEquals(await allowed("http://10.9.9.9/", "*"), true);
  let threw = false;
  try {
    parseAllowList("10.0.0.0/99");
  } catch {
    threw = true;
  }
  assertEquals(threw, true);
});
