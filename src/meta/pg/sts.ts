// Token service sessions and directory (LDAP) access mappings in PostgreSQL; behaves as
// src/meta/sqlite_sts.ts.
import type { LdapMapping, SessionRecord } from "../store.ts";
import { num, type Queryable } from "./sql.ts";

export const STS_DDL = `
  CREATE TABLE sts_sessions (
    access_key TEXT COLLATE "C" PRIMARY KEY,
    sealed_secret TEXT NOT NULL,
    sealed_token TEXT NOT NULL,
    parent_kind TEXT NOT NULL,
    parent_id TEXT NOT NULL,
    ldap_dn TEXT,
    ldap_groups TEXT,
    policy TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    parent_key TEXT
  );
  CREATE INDEX sts_sessions_by_expiry ON sts_sessions (expires_at);
  CREATE TABLE ldap_mappings (
    kind TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    bucket_access TEXT NOT NULL,
    is_admin BOOLEAN NOT NULL,
    PRIMARY KEY (kind, name)
  );
`;

type Row = Record<string, unknown>;

function toSession(row: Row): SessionRecord {
  return {
    accessKey: row.access_key as string,
    sealedSecret: row.sealed_secret as string,
    sealedToken: row.sealed_token as string,
    parentKind: row.parent_kind as SessionRecord["parentKind"],
    parentId: row.parent_id as string,
    ...(row.parent_key !== null && row.parent_key !== undefined
      ? { parentKey: row.parent_key as string }
      : {}),
    ...(row.ldap_dn !== null ? { ldapDn: row.ldap_dn as string } : {}),
    ...(row.ldap_groups !== null ? { ldapGroups: JSON.parse(row.ldap_groups as string) } : {}),
    ...(row.policy !== null ? { policy: row.policy as string } : {}),
    createdAt: num(row.created_at),
    expiresAt: num(row.expires_at),
  };
}

function toMapping(row: Row): LdapMapping {
  return {
    kind: row.kind as LdapMapping["kind"],
    name: row.name as string,
    bucketAccess: JSON.parse(row.bucket_access as string),
    isAdmin: row.is_admin as boolean,
  };
}

export class PgSts {
  /** Stores a session and drops the expired ones. */
  async createSession(q: Queryable, s: SessionRecord): Promise<void> {
    await q`DELETE FROM sts_sessions WHERE expires_at < ${Date.now()}`;
    await this.saveSession(q, s);
  }

  /** Stores a session, replacing one of the same access key (a replicated copy). */
  async saveSession(q: Queryable, s: SessionRecord): Promise<void> {
    await q`
      INSERT INTO sts_sessions (access_key, sealed_secret, sealed_token, parent_kind, parent_id,
        ldap_dn, ldap_groups, policy, created_at, expires_at, parent_key)
      VALUES (${s.accessKey}, ${s.sealedSecret}, ${s.sealedToken}, ${s.parentKind},
        ${s.parentId}, ${s.ldapDn ?? null},
        ${s.ldapGroups ? JSON.stringify(s.ldapGroups) : null}, ${s.policy ?? null},
        ${s.createdAt}, ${s.expiresAt}, ${s.parentKey ?? null})
      ON CONFLICT (access_key) DO UPDATE SET sealed_secret = excluded.sealed_secret,
        sealed_token = excluded.sealed_token, parent_kind = excluded.parent_kind,
        parent_id = excluded.parent_id, ldap_dn = excluded.ldap_dn,
        ldap_groups = excluded.ldap_groups, policy = excluded.policy,
        created_at = excluded.created_at, expires_at = excluded.expires_at,
        parent_key = excluded.parent_key`;
  }

  async deleteSession(q: Queryable, accessKey: string): Promise<void> {
    await q`DELETE FROM sts_sessions WHERE access_key = ${accessKey}`;
  }

  async getMapping(q: Queryable, kind: string, name: string): Promise<LdapMapping | undefined> {
    const [row] = await q`SELECT * FROM ldap_mappings WHERE kind = ${kind} AND name = ${name}`;
    return row ? toMapping(row) : undefined;
  }

  async getSession(q: Queryable, accessKey: string): Promise<SessionRecord | undefined> {
    const rows = await q`SELECT * FROM sts_sessions WHERE access_key = ${accessKey}`;
    return rows.length ? toSession(rows[0]) : undefined;
  }

  async putMapping(q: Queryable, m: LdapMapping): Promise<void> {
    await q`
      INSERT INTO ldap_mappings (kind, name, bucket_access, is_admin)
      VALUES (${m.kind}, ${m.name}, ${JSON.stringify(m.bucketAccess)}, ${m.isAdmin})
      ON CONFLICT (kind, name) DO UPDATE
        SET bucket_access = excluded.bucket_access, is_admin = excluded.is_admin`;
  }

  async deleteMapping(q: Queryable, kind: string, name: string): Promise<boolean> {
    return (await q`DELETE FROM ldap_mappings WHERE kind = ${kind} AND name = ${name}`)
      .count === 1;
  }

  async listMappings(q: Queryable): Promise<LdapMapping[]> {
    const rows = await q`SELECT * FROM ldap_mappings ORDER BY kind, name`;
    return rows.map(toMapping);
  }
}
