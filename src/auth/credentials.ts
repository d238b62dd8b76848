// Access keys -> secrets and principals: the administrator from its credentials, users from
// the metadata store with their secrets unsealed on demand.
import type { MetaStore, UserRecord } from "../meta/store.ts";
import { ADMIN_ID, type AdminCredentials } from "./admin_credentials.ts";
import type { Principal } from "./principal.ts";
import type { SecretSealer } from "./secrets.ts";
import { LDAP_ID_PREFIX, type LdapService } from "./ldap/service.ts";
import { SESSION_KEY_PREFIX, Sessions } from "./sts/sessions.ts";
import type { SessionRecord } from "../meta/store.ts";

export function userPrincipal(user: UserRecord): Principal {
  return {
    kind: "user",
    id: user.id,
    displayName: user.name,
    accessKey: user.accessKey,
    enabled: user.enabled,
    bucketAccess: user.bucketAccess,
  };
}

export class Credentials {
  /** Temporary credentials issued by the token service. */
  readonly sessions: Sessions;

  constructor(
    readonly admin: AdminCredentials,
    readonly meta: MetaStore,
    readonly sealer: SecretSealer,
    /** Directory sign-in, when STORE_LDAP_ENABLED. */
    readonly ldap?: LdapService,
  ) {
    this.sessions = new Sessions(meta, sealer, (record) => this.#parentOf(record));
  }

  /** The principal a session was issued to, as it is now. */
  async #parentOf(record: SessionRecord): Promise<Principal | undefined> {
    if (record.parentKind === "user") {
      if (record.parentId === ADMIN_ID) return this.adminPrincipal();
      const user = await this.meta.getUser({ id: record.parentId });
      // Rotating a user's keys also ends the sessions those keys issued: by the key they were
      // asked for with, and (older sessions, which do not name it) by time.
      if (!user || user.keyCreatedAt > record.createdAt) return undefined;
      if (record.parentKey !== undefined && record.parentKey !== user.accessKey) return undefined;
      return userPrincipal(user);
    }
    if (!this.ldap) return undefined;
    const known = record.ldapDn !== undefined
      ? { dn: record.ldapDn, groups: record.ldapGroups ?? [] }
      : undefined;
    const identity = await this.ldap.identity(record.parentId, known);
    return identity && await this.ldap.principal(identity);
  }

  adminPrincipal(): Principal {
    return {
      kind: "admin",
      id: ADMIN_ID,
      displayName: this.admin.user,
      accessKey: this.admin.user,
      enabled: true,
      bucketAccess: [],
    };
  }

  /** The secret and the principal behind an access key: one lookup, one unsealing. */
  async lookup(accessKey: string): Promise<{ secret: string; principal: Principal } | undefined> {
    if (accessKey === this.admin.user) {
      return { secret: this.admin.password, principal: this.adminPrincipal() };
    }
    if (accessKey.startsWith(SESSION_KEY_PREFIX)) return await this.sessions.lookup(accessKey);
    const user = await this.meta.getUser({ accessKey });
    if (!user) return undefined;
    return { secret: this.sealer.open(user.sealedSecret, user.id), principal: userPrincipal(user) };
  }

  /** The principal behind a user id (bucket and object owners), for display names. */
  async ownerName(id: string): Promise<string> {
    if (id === ADMIN_ID) return this.admin.user;
    if (id.startsWith(LDAP_ID_PREFIX)) return id.slice(LDAP_ID_PREFIX.length);
    return (await this.meta.getUser({ id }))?.name ?? id;
  }
}
