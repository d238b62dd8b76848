// STORE_LDAP_* settings: the directory's addresses, the service account, how users and groups are
// found, and the defaults each directory kind (preset) brings.

export type LdapPreset = "openldap" | "389ds" | "ad";

export interface LdapConfig {
  enabled: boolean;
  /** ldap:// or ldaps:// URLs, tried in order (failover). */
  urls: string[];
  baseDn: string;
  bindDn?: string;
  bindPassword?: string;
  /** Search filter with `{username}`, e.g. `(uid={username})`. */
  userFilter: string;
  groupBaseDn: string;
  /** Search filter with `{dn}` and/or `{username}`. */
  groupFilter: string;
  groupNameAttr: string;
  emailAttr: string;
  displayNameAttr: string;
  preset: LdapPreset;
  /** Attribute listing the user's groups by DN (AD `memberOf`); read besides the group search. */
  memberOfAttr?: string;
  /** How the directory marks a disabled account. */
  disabledBy?: "userAccountControl" | "nsAccountLock";
  startTls: boolean;
  caFile?: string;
  skipVerify: boolean;
  /** Seconds a sign-in and a user's groups are cached. */
  cacheTtl: number;
  /** Seconds for connecting and for each operation. */
  timeout: number;
}

interface PresetDefaults {
  userFilter: string;
  groupFilter: string;
  emailAttr: string;
  displayNameAttr: string;
  memberOfAttr?: string;
  disabledBy?: LdapConfig["disabledBy"];
}

export const PRESETS: Record<LdapPreset, PresetDefaults> = {
  openldap: {
    userFilter: "(uid={username})",
    groupFilter: "(|(member={dn})(uniqueMember={dn}))",
    emailAttr: "mail",
    displayNameAttr: "cn",
  },
  "389ds": {
    userFilter: "(uid={username})",
    groupFilter: "(|(member={dn})(uniqueMember={dn}))",
    emailAttr: "mail",
    displayNameAttr: "cn",
    disabledBy: "nsAccountLock",
  },
  ad: {
    userFilter: "(sAMAccountName={username})",
    // LDAP_MATCHING_RULE_IN_CHAIN: every group the user is in, nested groups included.
    groupFilter: "(member:1.2.840.113556.1.4.1941:={dn})",
    emailAttr: "mail",
    displayNameAttr: "displayName",
    memberOfAttr: "memberOf",
    disabledBy: "userAccountControl",
  },
};

export class LdapConfigError extends Error {}

type Env = (name: string) => string | undefined;

function flag(env: Env, name: string): boolean {
  const raw = (env(name) ?? "").toLowerCase();
  if (raw === "" || raw === "false" || raw === "0" || raw === "off") return false;
  if (raw === "true" || raw === "1" || raw === "on") return true;
  throw new LdapConfigError(`${name} must be true or false, got "${env(name)}"`);
}

function seconds(env: Env, name: string, fallback: number, max: number): number {
  const raw = env(name);
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw) || +raw < 1 || +raw > max) {
    throw new LdapConfigError(`${name} must be a whole number of seconds from 1 to ${max}`);
  }
  return Number(raw);
}

function filterSetting(env: Env, name: string, fallback: string, needs: string[]): string {
  const value = env(name) || fallback;
  if (!/^\(.*\)$/.test(value)) throw new LdapConfigError(`${name} must be an LDAP filter (...)`);
  if (!needs.some((n) => value.includes(n))) {
    throw new LdapConfigError(`${name} must contain ${needs.join(" or ")}`);
  }
  return value;
}

/** Reads and validates the settings; throws LdapConfigError naming the wrong one. */
export function loadLdapConfig(env: Env): LdapConfig {
  const enabled = flag(env, "STORE_LDAP_ENABLED");
  const presetName = env("STORE_LDAP_PRESET") || "openldap";
  if (!(presetName in PRESETS)) {
    throw new LdapConfigError(
      `STORE_LDAP_PRESET must be openldap, 389ds or ad, got "${presetName}"`,
    );
  }
  const preset = presetName as LdapPreset;
  const p = PRESETS[preset];
  const urls = (env("STORE_LDAP_URL") ?? "").split(",").map((u) => u.trim()).filter((u) => u);
  for (const url of urls) {
    if (!/^ldaps?:\/\/[^/?#\s]+\/?$/i.test(url)) {
      throw new LdapConfigError(`STORE_LDAP_URL: "${url}" is not an ldap:// or ldaps:// host:port`);
    }
  }
  const baseDn = env("STORE_LDAP_BASE_DN") ?? "";
  if (enabled && urls.length === 0) throw new LdapConfigError("STORE_LDAP_URL is required");
  if (enabled && baseDn === "") throw new LdapConfigError("STORE_LDAP_BASE_DN is required");
  const bindDn = env("STORE_LDAP_BIND_DN") || undefined;
  const bindPassword = env("STORE_LDAP_BIND_PASSWORD") || undefined;
  if ((bindDn === undefined) !== (bindPassword === undefined)) {
    throw new LdapConfigError("STORE_LDAP_BIND_DN and STORE_LDAP_BIND_PASSWORD go together");
  }
  const startTls = flag(env, "STORE_LDAP_STARTTLS");
  if (startTls && urls.some((u) => /^ldaps:/i.test(u))) {
    throw new LdapConfigError("STORE_LDAP_STARTTLS is for ldap:// URLs (ldaps:// is TLS already)");
  }
  return {
    enabled,
    urls,
    baseDn,
    bindDn,
    bindPassword,
    userFilter: filterSetting(env, "STORE_LDAP_USER_FILTER", p.userFilter, ["{username}"]),
    groupBaseDn: env("STORE_LDAP_GROUP_BASE_DN") || baseDn,
    groupFilter: filterSetting(env, "STORE_LDAP_GROUP_FILTER", p.groupFilter, [
      "{dn}",
      "{username}",
    ]),
    groupNameAttr: env("STORE_LDAP_GROUP_NAME_ATTR") || "cn",
    emailAttr: env("STORE_LDAP_ATTR_EMAIL") || p.emailAttr,
    displayNameAttr: env("STORE_LDAP_ATTR_DISPLAY_NAME") || p.displayNameAttr,
    preset,
    memberOfAttr: p.memberOfAttr,
    disabledBy: p.disabledBy,
    startTls,
    caFile: env("STORE_LDAP_TLS_CA_FILE") || undefined,
    skipVerify: flag(env, "STORE_LDAP_TLS_SKIP_VERIFY"),
    cacheTtl: seconds(env, "STORE_LDAP_CACHE_TTL", 300, 86400),
    timeout: seconds(env, "STORE_LDAP_TIMEOUT", 5, 300),
  };
}
