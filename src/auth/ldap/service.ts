// Directory users as principals: sign-in (cached for the TTL as a salted hash, never the
// password), each user's groups (refreshed after the TTL, kept while the directory is down), and
// the access mapped to groups and users through /admin/ldap.
import { timingSafeEqual } from "node:crypto";
import { log } from "../../log.ts";
import type { BucketAccess, BucketPermission, LdapMapping, MetaStore } from "../../meta/store.ts";
import type { Principal } from "../principal.ts";
import { SignInLimiter } from "../sign_in_limiter.ts";
import type { LdapConfig } from "./config.ts";
import type { Directory } from "./directory.ts";
import { DirectoryError, type DirectoryUser } from "./directory_error.ts";

export interface LdapIdentity extends DirectoryUser {
  /** Lower case: mappings and principal ids use it. */
  username: string;
  fetchedAt: number;
}

interface CachedSignIn {
  salt: Uint8Array;
  hash: Uint8Array;
  at: number;
}

/** How long the mappings read are used before they are read again. */
const MAPPINGS_MS = 1000;
/** Most users whose sign-in or groups are cached: memory stays bounded. */
const MAX_CACHED = 10_000;
const HASH_ITERATIONS = 10_000;
/** How soon an unreachable directory is asked again for a user's groups. */
const RETRY_MS = 30_000;

/** Directory users own buckets and objects by this prefix and their user name. */
export const LDAP_ID_PREFIX = "ldap:";

/** PBKDF2 through WebCrypto: it runs off the event loop (node:crypto's pbkdf2Sync would block). */
async function hashPassword(password: string, salt: Uint8Array): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(password),
    "PBKDF2",
    false,
    ["deriveBits"],
  );
  const bits = await crypto.subtle.deriveBits(
    {
      name: "PBKDF2",
      hash: "SHA-256",
      salt: salt as Uint8Array<ArrayBuffer>,
      iterations: HASH_ITERATIONS,
    },
    key,
    256,
  );
  return new Uint8Array(bits);
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= MAX_CACHED) map.delete(map.keys().next().value!);
  map.set(key, value);
}

/** The union of the mapped entries for a bucket: `none` wins, read and write add up. */
export function mergeAccess(entries: BucketAccess[]): BucketAccess[] {
  const byBucket = new Map<string, Set<BucketPermission>>();
  for (const e of entries) {
    const set = byBucket.get(e.bucket) ?? new Set();
    set.add(e.permission);
    byBucket.set(e.bucket, set);
  }
  return [...byBucket].map(([bucket, set]) => {
    const permission: BucketPermission = set.has("none")
      ? "none"
      : set.has("readwrite") || (set.has("read") && set.has("write"))
      ? "readwrite"
      : set.has("write")
      ? "write"
      : "read";
    return { bucket, permission };
  });
}

export class LdapService {
  readonly #signIns = new Map<string, CachedSignIn>();
  readonly #identities = new Map<string, LdapIdentity>();
  readonly #refreshing = new Map<string, Promise<LdapIdentity | undefined>>();
  #mappings?: Promise<LdapMapping[]>;
  /** When the mappings were read (another server on the same database may change them). */
  #mappingsAt = 0;
  /** Failed sign-ins per user name (the caller limits per client address too). */
  readonly userLimiter: SignInLimiter;

  constructor(
    readonly config: LdapConfig,
    readonly directory: Directory,
    readonly meta: MetaStore,
    limits: { maxFailures: number; windowMs: number },
    readonly now: () => number = Date.now,
  ) {
    this.userLimiter = new SignInLimiter({ ...limits, now });
  }

  get #ttlMs(): number {
    return this.config.cacheTtl * 1000;
  }

  /**
   * Signs a user in: from the cache when the same password succeeded within the TTL, else at the
   * directory. Throws DirectoryError.
   */
  async signIn(rawName: string, password: string): Promise<LdapIdentity> {
    const username = rawName.toLowerCase();
    if (password === "") throw new DirectoryError("invalid", "The password is empty.");
    const now = this.now();
    const cached = this.#signIns.get(username);
    const identity = this.#identities.get(username);
    if (
      cached && identity && now - cached.at < this.#ttlMs && now - identity.fetchedAt < this.#ttlMs
    ) {
      if (timingSafeEqual(await hashPassword(password, cached.salt), cached.hash)) return identity;
    }
    const user = await this.directory.signIn(rawName, password);
    const fresh: LdapIdentity = { ...user, username, fetchedAt: now };
    const salt = crypto.getRandomValues(new Uint8Array(16));
    remember(this.#signIns, username, { salt, hash: await hashPassword(password, salt), at: now });
    remember(this.#identities, username, fresh);
    return fresh;
  }

  /**
   * The user's identity for a request signed with session keys: cached, re-read from the
   * directory once the TTL has passed (so removal from a group or the directory takes effect);
   * with the directory down the last known one (or `known`, saved with the session) serves.
   */
  async identity(
    rawName: string,
    known?: { dn: string; groups: string[] },
  ): Promise<LdapIdentity | undefined> {
    const username = rawName.toLowerCase();
    const cached = this.#identities.get(username);
    if (cached && this.now() - cached.fetchedAt < this.#ttlMs) return cached;
    let pending = this.#refreshing.get(username);
    if (!pending) {
      pending = this.#refresh(username, cached, known)
        .finally(() => this.#refreshing.delete(username));
      this.#refreshing.set(username, pending);
    }
    return await pending;
  }

  async #refresh(
    username: string,
    cached: LdapIdentity | undefined,
    known: { dn: string; groups: string[] } | undefined,
  ): Promise<LdapIdentity | undefined> {
    const now = this.now();
    try {
      const user = await this.directory.lookup(username);
      // Gone from the directory: a disabled identity, so its sessions stop working.
      const fresh: LdapIdentity = user ? { ...user, username, fetchedAt: now } : {
        username,
        dn: cached?.dn ?? known?.dn ?? "",
        email: "",
        displayName: username,
        groups: [],
        disabled: true,
        fetchedAt: now,
      };
      if (fresh.disabled) this.#signIns.delete(username);
      remember(this.#identities, username, fresh);
      return fresh;
    } catch (err) {
      if (!(err instanceof DirectoryError)) throw err;
      log("warn", "LDAP: the directory is unreachable; the last known groups are used", {
        user: username,
        error: err.message,
      });
      const base = cached ?? (known && {
        username,
        dn: known.dn,
        email: "",
        displayName: username,
        groups: known.groups,
        disabled: false,
      });
      if (!base) return undefined;
      // Asked again after RETRY_MS, not on every request while the directory is down.
      const kept = { ...base, fetchedAt: now - this.#ttlMs + Math.min(RETRY_MS, this.#ttlMs) };
      remember(this.#identities, username, kept);
      return kept;
    }
  }

  /** The principal of a directory user: its own and its groups' mappings. */
  async principal(identity: LdapIdentity): Promise<Principal> {
    const groups = new Set(identity.groups);
    const mine = (await this.mappings()).filter((m) =>
      m.kind === "group" ? groups.has(m.name) : m.name === identity.username
    );
    return {
      kind: mine.some((m) => m.isAdmin) ? "admin" : "user",
      id: LDAP_ID_PREFIX + identity.username,
      displayName: identity.username,
      enabled: !identity.disabled,
      bucketAccess: mergeAccess(mine.flatMap((m) => m.bucketAccess)),
    };
  }

  /**
   * Every mapping: read again after each change here or from another node, and at most a second
   * after the last read (servers sharing one database change the same rows).
   */
  mappings(): Promise<LdapMapping[]> {
    if (this.now() - this.#mappingsAt >= MAPPINGS_MS) this.#mappings = undefined;
    if (!this.#mappings) {
      this.#mappingsAt = this.now();
      this.#mappings = this.meta.listLdapMappings().catch((err) => {
        this.#mappings = undefined;
        throw err;
      });
    }
    return this.#mappings;
  }

  /** The mappings changed in the metadata (replicated from another node): read them again. */
  mappingsChanged(): void {
    this.#mappings = undefined;
  }

  async putMapping(mapping: LdapMapping): Promise<void> {
    await this.meta.putLdapMapping(mapping);
    this.#mappings = undefined;
  }

  async deleteMapping(kind: LdapMapping["kind"], name: string): Promise<boolean> {
    const deleted = await this.meta.deleteLdapMapping(kind, name);
    this.#mappings = undefined;
    return deleted;
  }
}
