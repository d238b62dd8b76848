// The MetaStore contract: one suite of behaviours every MetaStore implementation must show, run
// against each store by its own test file (sqlite_contract_test.ts, pg_contract_test.ts). Each
// case gets a fresh, empty store from the factory and closes it afterwards; the node cases get
// two stores on the same data.
import type { MetaStore } from "../store.ts";
import { OBJECT_CASES } from "./objects.ts";
import { LISTING_CASES } from "./listings.ts";
import { UPLOAD_CASES } from "./uploads.ts";
import { RECORD_CASES } from "./records.ts";
import { AUDIT_CASES } from "./audit.ts";
import type { ContractCase } from "./helpers.ts";
import { NODE_CASES } from "./nodes.ts";

export type { ContractCase } from "./helpers.ts";

/**
 * A fresh, empty store and how to dispose of it; `peer` opens another store on the same data (a
 * second server node), closed by the runner before `close`.
 */
export type StoreFactory = () => Promise<{
  store: MetaStore;
  close(): Promise<void>;
  peer?: () => Promise<MetaStore>;
}>;

export const CONTRACT_CASES: ContractCase[] = [
  ...OBJECT_CASES,
  ...LISTING_CASES,
  ...UPLOAD_CASES,
  ...RECORD_CASES,
  ...AUDIT_CASES,
];

/** Runs every case as a step of `t`, each on a fresh store; `skip` names cases to leave out. */
export async function runContract(
  t: Deno.TestContext,
  factory: StoreFactory,
  skip: string[] = [],
): Promise<void> {
  for (const c of CONTRACT_CASES) {
    await t.step({
      name: c.name,
      ignore: skip.includes(c.name),
      fn: async () => {
        const { store, close } = await factory();
        try {
          await c.fn(store);
        } finally {
          await close();
        }
      },
    });
  }
  for (const c of NODE_CASES) {
    await t.step({
      name: c.name,
      ignore: skip.includes(c.name),
      fn: async () => {
        const { store, close, peer } = await factory();
        if (!peer) throw new Error("the factory opens no second node");
        const second = await peer();
        try {
          await c.fn(store, second);
        } finally {
          await second.close();
          await close();
        }
      },
    });
  }
}
