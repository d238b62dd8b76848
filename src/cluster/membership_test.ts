import { assertEquals } from "../../tests/integration/assert.ts";
import { MAX_MEMBERS, Membership, nodeRef } from "./membership.ts";

const self = { id: "a", url: "http://127.0.0.1:1" };
const b = { id: "b", url: "http://127.0.0.1:2" };
const c = { id: "c", url: "http://127.0.0.1:3" };

function states(m: Membership, now: number) {
  return m.view(now).map((v) => `${v.id}:${v.state}`);
}

Deno.test("health follows direct contact: alive, suspect, dead, alive again", () => {
  const m = new Membership(self, { suspectMs: 3000, deadMs: 6000 });
  m.heardFrom(b, 0);
  assertEquals(states(m, 2999), ["b:alive"]);
  assertEquals(states(m, 3000), ["b:suspect"]);
  assertEquals(states(m, 6000), ["b:dead"]);
  m.heardFrom(b, 7000);
  assertEquals(states(m, 7000), ["b:alive"]);
  m.leaving("b");
  assertEquals(states(m, 7001), ["b:dead"]);
  m.heardFrom(b, 8000);
  assertEquals(states(m, 8000), ["b:alive"]);
});

Deno.test("learned nodes are joining until heard from, dead if never; self is never listed", () => {
  const m = new Membership(self, { suspectMs: 3000, deadMs: 6000 });
  assertEquals(m.learn([self, b, c, { id: "x", url: self.url }], 0), 2);
  assertEquals(states(m, 1000), ["b:joining", "c:joining"]);
  m.heardFrom(c, 5000);
  assertEquals(states(m, 6000), ["b:dead", "c:alive"]);
  // Hearsay never overrides a URL direct contact showed.
  m.learn([{ id: "c", url: "http://evil:1" }], 6000);
  assertEquals(m.view(6000).find((v) => v.id === "c")?.url, c.url);
  assertEquals(m.refs().map((r) => r.id), ["a", "b", "c"]);
});

Deno.test("a new id at a known URL replaces the old entry; the list is bounded", () => {
  const m = new Membership(self, { suspectMs: 3000, deadMs: 6000 });
  m.heardFrom(b, 0);
  m.heardFrom({ id: "b2", url: b.url }, 1);
  assertEquals(states(m, 1), ["b2:alive"]);
  const many = Array.from({ length: MAX_MEMBERS + 10 }, (_, i) => ({
    id: `n${i}`,
    url: `http://10.0.${i >> 8}.${i & 255}:9000`,
  }));
  m.learn(many, 2);
  assertEquals(m.view(2).length, MAX_MEMBERS);
});

Deno.test("node references from messages are checked", () => {
  assertEquals(nodeRef(b), b);
  for (
    const bad of [
      null,
      "b",
      { id: "b" },
      { id: "b c", url: b.url },
      { id: "b", url: "ftp://x:1" },
      { id: "b", url: "http://x:1/path" },
      { id: "b", url: "not a url" },
    ]
  ) assertEquals(nodeRef(bad), undefined, JSON.stringify(bad));
});

const ids = (m: Membership) => m.view().map((v) => v.id);

Deno.test("a forgotten node stays out of the list until it starts again after the forget", () => {
  const m = new Membership(self, { suspectMs: 3000, deadMs: 6000 });
  assertEquals(m.heardFrom(b, 0, 100), true);
  m.heardFrom(c, 0, 100);
  assertEquals(m.forget("b", 10_000), true);
  assertEquals(m.forget("b", 10_000), false);
  assertEquals(m.forget("a", 10_000), false);
  assertEquals(ids(m), ["c"]);
  assertEquals(m.forgotten(), [{ id: "b", at: 10_000 }]);
  // Hearsay does not bring it back, nor does the old process still calling.
  assertEquals(m.learn([b], 10_001), 0);
  assertEquals(m.heardFrom(b, 10_002, 100), false);
  assertEquals(m.heardFrom(b, 10_002), false);
  assertEquals(ids(m), ["c"]);
  // Started again after the forget: back, and a late forget of the old one changes nothing.
  assertEquals(m.heardFrom(b, 20_000, 15_000), true);
  assertEquals(ids(m), ["b", "c"]);
  assertEquals(m.isForgotten("b"), false);
  assertEquals(m.forget("b", 10_000), false);
  assertEquals(ids(m), ["b", "c"]);
  // A node never heard from directly (no start known) is forgotten too.
  m.learn([{ id: "d", url: "http://127.0.0.1:4" }], 20_000);
  assertEquals(m.forget("d", 21_000), true);
  assertEquals(ids(m), ["b", "c"]);
});

Deno.test("a saved list comes back after a restart: its nodes known, its forgotten kept out", () => {
  const before = new Membership(self, { suspectMs: 3000, deadMs: 6000 });
  before.heardFrom(b, 0, 100);
  before.heardFrom(c, 0, 100);
  before.forget("c", 500);
  const saved = before.saved();
  assertEquals(saved, { members: [b], forgotten: [{ id: "c", at: 500 }] });
  const after = new Membership(self, { suspectMs: 3000, deadMs: 6000 });
  after.restore(JSON.parse(JSON.stringify(saved)), 1000);
  assertEquals(states(after, 1000), ["b:joining"]);
  assertEquals(after.saved(), saved);
  // c's process from before the forget is still refused, and lists do not bring it back.
  assertEquals(after.heardFrom(c, 1100, 100), false);
  assertEquals(after.learn([c], 1100), 0);
  // Started again after the forget: back.
  assertEquals(after.heardFrom(c, 1200, 600), true);
  assertEquals(states(after, 1200), ["b:joining", "c:alive"]);
  assertEquals(after.saved().forgotten, []);
});
