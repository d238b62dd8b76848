// Access keys -> secrets and principals: the administrator from its credentials, users from
// the metadata store with their secrets unsealed on demand.
import type { MetaStore, UserRecord } from "../meta/store.ts";
import { ADMIN_ID, type AdminCredentials } from "./admin_credentials.ts";
import type { Principal } from "./principal.ts";
import type { SecretSealer } from "./secrets.ts";

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
  constructor(
    readonly admin: AdminCredentials,
    readonly meta: MetaStore,
    readonly sealer: SecretSealer,
  ) {}

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
    const user = await this.meta.getUser({ accessKey });
    if (!user) return undefined;
    return { secret: this.sealer.open(user.sealedSecret, user.id), principal: userPrincipal(user) };
  }

  /** The principal behind a user id (bucket and object owners), for display names. */
  async ownerName(id: string): Promise<string> {
    if (id === ADMIN_ID) return this.admin.user;
    return (await this.meta.getUser({ id }))?.name ?? id;
  }
}
