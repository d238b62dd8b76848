// The administrator's key pair: from the environment, or generated once and kept on disk.
import { join } from "node:path";

export interface AdminCredentials {
  user: string;
  password: string;
  /** True when generated during this start (the caller prints them once). */
  generated: boolean;
}

const FILE = "admin-credentials.json";
export const KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
export const SECRET_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** Unbiased random characters from a cryptographic source. */
export function randomString(length: number, alphabet: string): string {
  const out: string[] = [];
  const limit = 256 - (256 % alphabet.length);
  while (out.length < length) {
    for (const b of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (b < limit && out.length < length) out.push(alphabet[b % alphabet.length]);
    }
  }
  return out.join("");
}

export async function loadAdminCredentials(
  dataDir: string,
  fromEnv: { user?: string; password?: string },
): Promise<AdminCredentials> {
  if (fromEnv.user && fromEnv.password) {
    return { user: fromEnv.user, password: fromEnv.password, generated: false };
  }
  const path = join(dataDir, FILE);
  try {
    const saved = JSON.parse(await Deno.readTextFile(path));
    if (typeof saved.user === "string" && typeof saved.password === "string") {
      return { user: saved.user, password: saved.password, generated: false };
    }
    throw new Error(`${path} is not a valid credentials file`);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const creds = {
    user: "STAD" + randomString(16, KEY_ALPHABET),
    password: randomString(40, SECRET_ALPHABET),
  };
  const tmp = `${path}.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify(creds), { mode: 0o600 });
  await Deno.rename(tmp, path);
  return { ...creds, generated: true };
}

export const ADMIN_ID = "admin";
