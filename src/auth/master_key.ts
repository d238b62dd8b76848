// The master key: from STORE_MASTER_KEY, or generated once and kept in the data directory.
// Purpose-specific keys are derived from it with HKDF, so one secret protects several uses.
import { hkdfSync } from "node:crypto";
import { join } from "node:path";

const FILE = "master.key";

export class MasterKey {
  readonly #key: Uint8Array;

  constructor(key: Uint8Array) {
    if (key.byteLength !== 32) throw new Error("The master key must be 32 bytes");
    this.#key = key;
  }

  /** A 32-byte key for one purpose, e.g. "credential-secrets". */
  derive(purpose: string): Uint8Array {
    return new Uint8Array(hkdfSync("sha256", this.#key, new Uint8Array(0), `store:${purpose}`, 32));
  }
}

/** Decodes 64 hex characters or base64 of 32 bytes; undefined when neither. */
export function decodeMasterKey(text: string): Uint8Array | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) {
    return Uint8Array.from(text.match(/../g)!, (b) => parseInt(b, 16));
  }
  try {
    const bin = atob(text);
    if (bin.length === 32) return Uint8Array.from(bin, (c) => c.charCodeAt(0));
  } catch { /* not base64 */ }
  return undefined;
}

export async function loadMasterKey(dataDir: string, fromEnv?: Uint8Array): Promise<MasterKey> {
  if (fromEnv) return new MasterKey(fromEnv);
  const path = join(dataDir, FILE);
  try {
    const key = decodeMasterKey((await Deno.readTextFile(path)).trim());
    if (!key) throw new Error(`${path} does not hold a valid master key`);
    return new MasterKey(key);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const key = crypto.getRandomValues(new Uint8Array(32));
  const tmp = `${path}.tmp`;
  await Deno.writeTextFile(tmp, btoa(String.fromCharCode(...key)) + "\n", { mode: 0o600 });
  await Deno.rename(tmp, path);
  return new MasterKey(key);
}
