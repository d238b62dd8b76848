// The MetaStore contract: one suite of behaviours every MetaStore implementation must show, run
// against each store by its own test file (sqlite_contract_test.ts, pg_contract_test.ts). Each
// case gets a fresh, empty store from the factory and closes it afterwards.
import type { MetaStore } from "../store.ts";
import { OBJECT_CASES } from "./objects.ts";
import { LISTING_CASES } from "./listings.ts";
import { UPLOAD_CASES } from "./uploads.ts";
import { RECORD_CASES } from "./records.ts";
import { AUDIT_CASES } from "./audit.ts";
import type { ContractCase } from "./helpers.ts";

export type { ContractCase } from "./helpers.ts";

/** A fresh, empty store and how to dispose of it. */
export type StoreFactory = () => Promise<{ store: MetaStore; close(): Promise<void> }>;

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
}
