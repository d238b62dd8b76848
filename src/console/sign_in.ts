// Console sign-in: an access key and its secret (users and the administrator), or directory
// credentials when LDAP is on. Failures count per client address (the server's sign-in limiter)
// and per access key or directory user name; either over its limit refuses before any check.
import { createHash, timingSafeEqual } from "node:crypto";
import type { Principal } from "../auth/principal.ts";
import { SignInLimiter } from "../auth/sign_in_limiter.ts";
import { DirectoryError } from "../auth/ldap/directory_error.ts";
import { log } from "../log.ts";
import { ldapSignIn, SignInThrottled } from "../auth/ldap/sign_in.ts";
import { SESSION_KEY_PREFIX } from "../auth/sts/sessions.ts";
import { ApiError } from "../api/json.ts";
import type { AppDeps } from "../protocol.ts";
import type { SessionOwner } from "./sessions.ts";

export interface SignInInput {
  method: "key" | "ldap";
  /** Access key or directory user name. */
  name: string;
  /** Secret key or directory password. */
  secret: string;
}

function digest(text: string): Uint8Array {
  return createHash("sha256").update(text).digest();
}

const WRONG = () => new ApiError(401, "sign_in_failed", "The access key or secret is not right.");

function throttled(seconds: number): ApiError {
  return new ApiError(429, "too_many_attempts", "Too many failed sign-ins; try again later.", {
    "retry-after": String(seconds),
  });
}

export function parseSignIn(body: Record<string, unknown>): SignInInput {
  const method = body.method ?? "key";
  const name = body.method === "ldap" ? body.username : body.access_key;
  const secret = body.method === "ldap" ? body.password : body.secret_key;
  if (method !== "key" && method !== "ldap") {
    throw new ApiError(400, "invalid_field", "method must be key or ldap.");
  }
  if (typeof name !== "string" || name === "" || name.length > 256) {
    throw new ApiError(400, "invalid_field", "The access key (or user name) is required.");
  }
  if (typeof secret !== "string" || secret === "" || secret.length > 1024) {
    throw new ApiError(400, "invalid_field", "The secret (or password) is required.");
  }
  return { method, name, secret };
}

export class ConsoleSignIn {
  /** Failures per access key, whichever address they come from. */
  readonly #perKey: SignInLimiter;

  constructor(private readonly deps: AppDeps) {
    this.#perKey = new SignInLimiter({
      maxFailures: deps.config.signInLimit,
      windowMs: deps.config.signInWindow * 1000,
    });
  }

  /** The session owner for valid credentials, with the principal as it is now. */
  async check(
    input: SignInInput,
    client: string,
  ): Promise<{ owner: SessionOwner; principal: Principal }> {
    if (input.method === "ldap") return await this.#ldap(input, client);
    const keyId = "key/" + input.name;
    const wait = Math.max(this.deps.signIns.retryAfter(client), this.#perKey.retryAfter(keyId));
    if (wait > 0) throw throttled(wait);
    // Temporary credentials need their session token: they sign requests, not consoles.
    const found = input.name.startsWith(SESSION_KEY_PREFIX)
      ? undefined
      : await this.deps.credentials.lookup(input.name);
    const expected = digest(found?.secret ?? crypto.randomUUID());
    if (!found || !timingSafeEqual(digest(input.secret), expected) || !found.principal.enabled) {
      this.deps.signIns.failed(client);
      this.#perKey.failed(keyId);
      throw WRONG();
    }
    this.deps.signIns.succeeded(client);
    this.#perKey.succeeded(keyId);
    return { owner: { kind: "key", accessKey: input.name }, principal: found.principal };
  }

  async #ldap(input: SignInInput, client: string) {
    const ldap = this.deps.credentials.ldap;
    if (!ldap) {
      throw new ApiError(400, "ldap_disabled", "Directory sign-in is not enabled on this server.");
    }
    try {
      const identity = await ldapSignIn(ldap, this.deps.signIns, client, {
        username: input.name,
        password: input.secret,
      });
      const principal = await ldap.principal(identity);
      const owner: SessionOwner = {
        kind: "ldap",
        username: identity.username,
        known: { dn: identity.dn, groups: identity.groups },
      };
      return { owner, principal };
    } catch (err) {
      if (err instanceof SignInThrottled) throw throttled(err.retryAfter);
      if (err instanceof DirectoryError) {
        if (err.reason === "unavailable") {
          log("warn", "LDAP sign-in failed: directory unreachable", {
            source: "console",
            code: "directory_unavailable",
            error: err.message,
          });
          throw new ApiError(503, "directory_unavailable", "The directory does not answer.");
        }
        throw new ApiError(401, "sign_in_failed", "The user name or password is not right.");
      }
      throw err;
    }
  }
}
