// Share tokens (256 random bits, only the SHA-256 stored) and share passwords (scrypt).
import { createHash, randomBytes, scryptSync, timingSafeEqual } from "node:crypto";

const TOKEN_PREFIX = "shr_";

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
    .replace(/=+$/, "");
}

export function newShareToken(): string {
  return TOKEN_PREFIX + base64url(crypto.getRandomValues(new Uint8Array(32)));
}

export function shareTokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Whether a path segment could be a token at all (cheap check before a lookup). */
export function looksLikeToken(text: string): boolean {
  return /^shr_[A-Za-z0-9_-]{43}$/.test(text);
}

const SCRYPT = { N: 16384, r: 8, p: 1 };

export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 32, SCRYPT);
  return `scrypt$${salt.toString("base64")}$${hash.toString("base64")}`;
}

export function checkPassword(password: string, stored: string): boolean {
  const [kind, salt, hash] = stored.split("$");
  if (kind !== "scrypt" || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64");
  const actual = scryptSync(password, Buffer.from(salt, "base64"), expected.length, SCRYPT);
  return timingSafeEqual(actual, expected);
}
