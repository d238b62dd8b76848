// Token service sessions and directory (LDAP) access mappings in SQLite (part of SqliteMetaStore).
import type { SQLInputValue, StatementSync } from "node:sqlite";
import type { LdapMapping, SessionRecord } from "./store.ts";

type Row = Record<string, SQLInputValue>;

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
    createdAt: row.created_at as number,
    expiresAt: row.expires_at as number,
  };
}

function toMapping(row: Row): LdapMapping {
  return {
    kind: row.kind as LdapMapping["kind"],
    name: row.name as string,
    bucketAccess: JSON.parse(row.bucket_access as string),
    isAdmin: row.is_admin === 1,
  };
}

export class SqliteSts {
  constructor(readonly stmt: (sql: string) => StatementSync) {}

  createSession(s: SessionRecord): void {
    this.stmt("DELETE FROM sts_sessions WHERE expires_at < ?").run(Date.now());
    this.saveSession(s);
  }

  /** Stores a session, replacing one of the same access key (a replicated copy). */
  saveSession(s: SessionRecord): void {
    this.stmt(
      "INSERT OR REPLACE INTO sts_sessions (access_key, sealed_secret, sealed_token, " +
        "parent_kind, parent_id, ldap_dn, ldap_groups, policy, created_at, expires_at, " +
        "parent_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ).run(
      s.accessKey,
      s.sealedSecret,
      s.sealedToken,
      s.parentKind,
      s.parentId,
      s.ldapDn ?? null,
      s.ldapGroups ? JSON.stringify(s.ldapGroups) : null,
      s.policy ?? null,
      s.createdAt,
      s.expiresAt,
      s.parentKey ?? null,
    );
  }

  getSession(accessKey: string): SessionRecord | undefined {
    const row = this.stmt("SELECT * FROM sts_sessions WHERE access_key = ?").get(accessKey) as
      | Row
      | undefined;
    return row ? toSession(row) : undefined;
  }

  deleteSession(accessKey: string): void {
    this.stmt("DELETE FROM sts_sessions WHERE access_key = ?").run(accessKey);
  }

  getMapping(kind: string, name: string): LdapMapping | undefined {
    const row = this.stmt("SELECT * FROM ldap_mappings WHERE kind = ? AND name = ?").get(
      kind,
      name,
    ) as Row | undefined;
    return row ? toMapping(row) : undefined;
  }

  putMapping(m: LdapMapping): void {
    this.stmt(
      "INSERT INTO ldap_mappings (kind, name, bucket_access, is_admin) VALUES (?, ?, ?, ?) " +
        "ON CONFLICT (kind, name) DO UPDATE SET bucket_access = excluded.bucket_access, " +
        "is_admin = excluded.is_admin",
    ).run(m.kind, m.name, JSON.stringify(m.bucketAccess), m.isAdmin ? 1 : 0);
  }

  deleteMapping(kind: string, name: string): boolean {
    return this.stmt("DELETE FROM ldap_mappings WHERE kind = ? AND name = ?").run(kind, name)
      .changes === 1;
  }

  listMappings(): LdapMapping[] {
    const rows = this.stmt("SELECT * FROM ldap_mappings ORDER BY kind, name").all() as Row[];
    return rows.map(toMapping);
  }
}
