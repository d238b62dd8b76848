// Shared by the sender unit tests (users_test.ts, records_test.ts): a node's own sealer, node a
// having heard from node b, running a sender until what it delivered is enough, and the first
// message a sender delivers.
import { MasterKey } from "../auth/master_key.ts";
import { SecretSealer } from "../auth/secrets.ts";
import { Membership } from "./membership.ts";
import type { NodeRounds } from "./node_rounds.ts";
import type { Deliver } from "./replication.ts";

/** A sealer with a master key of its own, as a node has. */
export function nodeSealer(): SecretSealer {
  return new SecretSealer(new MasterKey(crypto.getRandomValues(new Uint8Array(32))));
}

/** Node a's view with node b alive (for the whole test). */
export function nodeAWithB(): Membership {
  const members = new Membership({ id: "a", url: "http://a" }, {
    suspectMs: 60_000,
    deadMs: 120_000,
  });
  members.heardFrom({ id: "b", url: "http://b" });
  return members;
}

/** Starts `sender`, waits (3 s at most) until `done` holds, and stops it. */
export async function runUntil(sender: NodeRounds, done: () => boolean): Promise<void> {
  sender.start();
  const until = Date.now() + 3000;
  try {
    while (!done()) {
      if (Date.now() > until) throw new Error("Condition not reached");
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    await sender.stop();
  }
}

/** The first message (as JSON) of a sender made by `make` around a delivery that keeps it. */
export async function firstMessage(make: (deliver: Deliver) => NodeRounds): Promise<string> {
  const bodies: string[] = [];
  const sender = make((_url, body) => {
    bodies.push(JSON.stringify(body));
    return Promise.resolve({});
  });
  await runUntil(sender, () => bodies.length === 1);
  return bodies[0];
}
