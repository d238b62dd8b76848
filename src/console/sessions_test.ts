import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { ConsoleSessions } from "./sessions.ts";

const OWNER = { kind: "key" as const, accessKey: "AKEY" };

function clocked(opts: { idleMs: number; maxAgeMs: number; max?: number }) {
  let now = 1_000_000;
  const sessions = new ConsoleSessions({ ...opts, now: () => now });
  return { sessions, advance: (ms: number) => now += ms };
}

Deno.test("sessions: ids and CSRF tokens are random and distinct", () => {
  const { sessions } = clocked({ idleMs: 1000, maxAgeMs: 10_000 });
  const a = sessions.create(OWNER);
  const b = sessions.create(OWNER);
  assert(a.id !== b.id && a.csrf !== b.csrf && a.id !== a.csrf);
  assert(/^[A-Za-z0-9_-]{43}$/.test(a.id), a.id);
});

Deno.test("sessions: the idle clock restarts on use; absolute age ends them anyway", () => {
  const { sessions, advance } = clocked({ idleMs: 1000, maxAgeMs: 2500 });
  const s = sessions.create(OWNER);
  advance(900);
  assertEquals(sessions.touch(s.id)?.id, s.id);
  advance(900);
  assertEquals(sessions.touch(s.id)?.id, s.id);
  advance(800);
  assertEquals(sessions.touch(s.id), undefined, "2.6 s old: past the absolute limit");
  const idle = sessions.create(OWNER);
  advance(1000);
  assertEquals(sessions.touch(idle.id), undefined, "idle for 1 s");
  assertEquals(sessions.size, 0);
});

Deno.test("sessions: bounded; the least recently used go first", () => {
  const { sessions, advance } = clocked({ idleMs: 60_000, maxAgeMs: 600_000, max: 3 });
  const [a, b, c] = [sessions.create(OWNER), sessions.create(OWNER), sessions.create(OWNER)];
  advance(10);
  sessions.touch(a.id);
  const d = sessions.create(OWNER);
  assertEquals(sessions.size, 3);
  assertEquals(sessions.touch(b.id), undefined, "b was the least recently seen");
  for (const s of [a, c, d]) assertEquals(sessions.touch(s.id)?.id, s.id);
  sessions.end(a.id);
  assertEquals(sessions.touch(a.id), undefined);
});
