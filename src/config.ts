// Environment variables -> typed, validated configuration.
import { decodeMasterKey } from "./auth/master_key.ts";
import type { DialectName } from "./http/dialect.ts";

export interface Config {
  address: string;
  port: number;
  dataDir: string;
  region: string;
  dialect: DialectName;
  adminUser?: string;
  adminPassword?: string;
  /** Objects up to this many bytes live inside their metadata row. */
  inlineMax: number;
  logLevel: "debug" | "info" | "warn" | "error";
  /** 32 bytes from STORE_MASTER_KEY; generated and kept in the data directory when unset. */
  masterKey?: Uint8Array;
  /** Lifetime of bearer tokens of the presigned-URL service, in seconds. */
  tokenTtl: number;
}

export class ConfigError extends Error {}

type Env = (name: string) => string | undefined;

function intSetting(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env(name);
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) {
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  }
  return value;
}

function choiceSetting<T extends string>(env: Env, name: string, choices: T[], fallback: T): T {
  const raw = env(name);
  if (raw === undefined || raw === "") return fallback;
  if (!(choices as string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${choices.join(", ")}, got "${raw}"`);
  }
  return raw as T;
}

export function loadConfig(env: Env = (n) => Deno.env.get(n)): Config {
  const region = env("STORE_REGION") || "us-east-1";
  if (!/^[a-z0-9-]{1,32}$/.test(region)) {
    throw new ConfigError(
      `STORE_REGION must be lowercase letters, digits and dashes, got "${region}"`,
    );
  }
  const adminUser = env("STORE_ADMIN_USER") || undefined;
  const adminPassword = env("STORE_ADMIN_PASSWORD") || undefined;
  if ((adminUser === undefined) !== (adminPassword === undefined)) {
    throw new ConfigError("STORE_ADMIN_USER and STORE_ADMIN_PASSWORD must be set together");
  }
  if (adminUser !== undefined && !/^[A-Za-z0-9._@-]{3,128}$/.test(adminUser)) {
    throw new ConfigError(
      "STORE_ADMIN_USER must be 3-128 characters of letters, digits, '.', '_', '@' or '-'",
    );
  }
  if (adminPassword !== undefined && (adminPassword.length < 8 || adminPassword.length > 128)) {
    throw new ConfigError("STORE_ADMIN_PASSWORD must be 8-128 characters long");
  }
  const rawMasterKey = env("STORE_MASTER_KEY") || undefined;
  const masterKey = rawMasterKey === undefined ? undefined : decodeMasterKey(rawMasterKey);
  if (rawMasterKey !== undefined && !masterKey) {
    throw new ConfigError("STORE_MASTER_KEY must be 64 hex characters or the base64 of 32 bytes");
  }
  return {
    address: env("STORE_ADDRESS") || "0.0.0.0",
    port: intSetting(env, "STORE_PORT", 9000, 0, 65535),
    dataDir: env("STORE_DATA_DIR") || "./data",
    region,
    dialect: choiceSetting(env, "STORE_DIALECT", ["store", "amz"], "store"),
    adminUser,
    adminPassword,
    inlineMax: intSetting(env, "STORE_INLINE_MAX", 64 * 1024, 0, 1024 * 1024),
    logLevel: choiceSetting(env, "STORE_LOG_LEVEL", ["debug", "info", "warn", "error"], "info"),
    masterKey,
    tokenTtl: intSetting(env, "STORE_TOKEN_TTL", 3600, 60, 7 * 24 * 3600),
  };
}
