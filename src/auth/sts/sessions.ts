// Temporary credentials (token service sessions): an access key, a secret and a session token,
// valid until they expire, carrying the access of the user they were issued to (looked up again
// on each use, so a disabled user's sessions stop at once) narrowed by an optional session policy.
// Sessions are cached: a request signed with session keys costs no database read once warm.
import { timingSafeEqual } from "node:crypto";
import { S3Error } from "../../http/errors.ts";
import type { MetaStore, SessionRecord } from "../../meta/store.ts";
import { KEY_ALPHABET, randomString, SECRET_ALPHABET } from "../admin_credentials.ts";
import { type BucketPolicy, parseSessionPolicy } from "../policy.ts";
import type { Principal, PrincipalSession } from "../principal.ts";
import type { SecretSealer } from "../secrets.ts";

/** Every session access key starts with this; 16 random characters follow. */
export const SESSION_KEY_PREFIX = "STSE";
/** Most sessions kept unsealed in memory. */
const MAX_CACHED = 10_000;

export interface IssuedSession {
  accessKey: string;
  secret: string;
  token: string;
  expiresAt: number;
}

interface Cached {
  record: SessionRecord;
  secret: string;
  token: string;
  policy?: BucketPolicy;
}

export type ParentResolver = (record: SessionRecord) => Promise<Principal | undefined>;

export class Sessions {
  readonly #cache = new Map<string, Cached>();

  constructor(
    readonly meta: MetaStore,
    readonly sealer: SecretSealer,
    readonly parentOf: ParentResolver,
  ) {}

  async issue(
    opts: Omit<SessionRecord, "accessKey" | "sealedSecret" | "sealedToken">,
  ): Promise<IssuedSession> {
    const accessKey = SESSION_KEY_PREFIX + randomString(16, KEY_ALPHABET);
    const secret = randomString(40, SECRET_ALPHABET);
    const token = randomString(96, SECRET_ALPHABET);
    await this.meta.createSession({
      ...opts,
      accessKey,
      sealedSecret: this.sealer.seal(secret, accessKey),
      sealedToken: this.sealer.seal(token, `${accessKey}/token`),
    });
    return { accessKey, secret, token, expiresAt: opts.expiresAt };
  }

  async #load(accessKey: string): Promise<Cached | undefined> {
    const hit = this.#cache.get(accessKey);
    if (hit) return hit;
    const record = await this.meta.getSession(accessKey);
    if (!record) return undefined;
    const loaded: Cached = {
      record,
      secret: this.sealer.open(record.sealedSecret, accessKey),
      token: this.sealer.open(record.sealedToken, `${accessKey}/token`),
      policy: record.policy === undefined
        ? undefined
        : parseSessionPolicy(record.policy, { stored: true }),
    };
    if (this.#cache.size >= MAX_CACHED) this.#cache.delete(this.#cache.keys().next().value!);
    this.#cache.set(accessKey, loaded);
    return loaded;
  }

  /** The secret and principal behind session keys (expired ones too: the caller says so). */
  async lookup(accessKey: string): Promise<{ secret: string; principal: Principal } | undefined> {
    const found = await this.#load(accessKey);
    if (!found) return undefined;
    if (found.record.expiresAt <= Date.now()) this.#cache.delete(accessKey);
    const parent = await this.parentOf(found.record);
    if (!parent) return undefined;
    const session: PrincipalSession = {
      token: found.token,
      expiresAt: found.record.expiresAt,
      ...(found.policy ? { policy: found.policy } : {}),
    };
    return { secret: found.secret, principal: { ...parent, accessKey, session } };
  }
}

function sameText(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * A request's session token against its principal: session keys need their token, unexpired;
 * long-term keys take none.
 */
export function checkSessionToken(principal: Principal, given: string | null, now: number): void {
  const session = principal.session;
  if (!session) {
    if (given === null) return;
    throw new S3Error("InvalidToken", "The provided token is malformed or otherwise invalid.");
  }
  if (given === null || !sameText(given, session.token)) {
    throw new S3Error("InvalidToken", "The provided token is malformed or otherwise invalid.");
  }
  if (session.expiresAt <= now) {
    throw new S3Error("ExpiredToken", "The provided token has expired.");
  }
}
