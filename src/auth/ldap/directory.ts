// The directory itself, through ldapts: find a user with the service account, check a password
// by binding as the user, read the user's groups. One short-lived connection per call, every
// step bounded by the timeout; URLs are tried in order until one answers.
import { Client, type Entry, InvalidCredentialsError, ResultCodeError } from "ldapts";
import type { ConnectionOptions } from "node:tls";
import type { LdapConfig } from "./config.ts";
import { fillFilter, firstRdnValue } from "./escape.ts";
import { DirectoryError, type DirectoryUser } from "./directory_error.ts";

export { DirectoryError, type DirectoryUser };

function unavailable(err: unknown): DirectoryError {
  if (err instanceof DirectoryError) return err;
  const detail = err instanceof Error ? err.message : String(err);
  return new DirectoryError("unavailable", `The directory could not be reached: ${detail}`);
}

/** An attribute's values, whatever case the server spelled its name in. */
function values(entry: Entry, attr: string): string[] {
  const lower = attr.toLowerCase();
  for (const [name, value] of Object.entries(entry)) {
    if (name.toLowerCase() !== lower || name === "dn") continue;
    const list = Array.isArray(value) ? value : [value];
    return list.map((v) => typeof v === "string" ? v : v.toString("utf8"));
  }
  return [];
}

export class Directory {
  readonly #tls: ConnectionOptions;

  constructor(readonly config: LdapConfig, caPem?: string) {
    this.#tls = {
      rejectUnauthorized: !config.skipVerify,
      ...(caPem !== undefined ? { ca: [caPem] } : {}),
    };
  }

  /** A connection bound as the service account (anonymous when none is configured). */
  async #connect(): Promise<Client> {
    const ms = this.config.timeout * 1000;
    let last: unknown;
    for (const url of this.config.urls) {
      // tlsOptions make ldapts connect with TLS: only for ldaps:// (STARTTLS upgrades later).
      const secure = /^ldaps:/i.test(url);
      const client = new Client({
        url,
        timeout: ms,
        connectTimeout: ms,
        ...(secure ? { tlsOptions: this.#tls } : {}),
      });
      try {
        if (this.config.startTls) await client.startTLS(this.#tls);
        if (this.config.bindDn) await client.bind(this.config.bindDn, this.config.bindPassword);
        return client;
      } catch (err) {
        await client.unbind().catch(() => {});
        // A refused service account is a configuration error, not an outage: no failover.
        if (err instanceof InvalidCredentialsError) {
          throw new DirectoryError("unavailable", "The directory refused the service account.");
        }
        last = err;
      }
    }
    throw unavailable(last);
  }

  async #findUser(client: Client, username: string): Promise<Entry | undefined> {
    const c = this.config;
    const attributes = [c.emailAttr, c.displayNameAttr];
    if (c.memberOfAttr) attributes.push(c.memberOfAttr);
    if (c.disabledBy) attributes.push(c.disabledBy);
    const { searchEntries } = await client.search(c.baseDn, {
      scope: "sub",
      filter: fillFilter(c.userFilter, { username }),
      attributes,
      sizeLimit: 2,
    });
    // Two entries for one name: ambiguous, nobody is signed in.
    return searchEntries.length === 1 ? searchEntries[0] : undefined;
  }

  async #describe(client: Client, entry: Entry, username: string): Promise<DirectoryUser> {
    const c = this.config;
    const groups = new Set<string>();
    if (c.memberOfAttr) {
      for (const dn of values(entry, c.memberOfAttr)) groups.add(firstRdnValue(dn).toLowerCase());
    }
    const { searchEntries } = await client.search(c.groupBaseDn, {
      scope: "sub",
      filter: fillFilter(c.groupFilter, { username, dn: entry.dn }),
      attributes: [c.groupNameAttr],
    });
    for (const group of searchEntries) {
      for (const name of values(group, c.groupNameAttr)) groups.add(name.toLowerCase());
    }
    return {
      dn: entry.dn,
      email: values(entry, c.emailAttr)[0] ?? "",
      displayName: values(entry, c.displayNameAttr)[0] ?? username,
      groups: [...groups].sort(),
      disabled: this.#disabled(entry),
    };
  }

  #disabled(entry: Entry): boolean {
    if (this.config.disabledBy === "userAccountControl") {
      // ACCOUNTDISABLE is bit 2 of userAccountControl.
      return (Number(values(entry, "userAccountControl")[0] ?? 0) & 2) !== 0;
    }
    if (this.config.disabledBy === "nsAccountLock") {
      return (values(entry, "nsAccountLock")[0] ?? "").toLowerCase() === "true";
    }
    return false;
  }

  /** Checks `password` by binding as the user the search finds; throws DirectoryError. */
  async signIn(username: string, password: string): Promise<DirectoryUser> {
    // An empty password makes a simple bind unauthenticated (RFC 4513 5.1.2): it would succeed.
    if (password === "") throw new DirectoryError("invalid", "The password is empty.");
    if (username === "") throw new DirectoryError("invalid", "The user name is empty.");
    const client = await this.#connect();
    try {
      const entry = await this.#findUser(client, username);
      if (!entry) throw new DirectoryError("invalid", "Unknown user or wrong password.");
      try {
        await client.bind(entry.dn, password);
      } catch (err) {
        if (err instanceof ResultCodeError) {
          throw new DirectoryError("invalid", "Unknown user or wrong password.");
        }
        throw err;
      }
      // Groups are read as the service account (a user may not see them).
      if (this.config.bindDn) await client.bind(this.config.bindDn, this.config.bindPassword);
      const user = await this.#describe(client, entry, username);
      if (user.disabled) throw new DirectoryError("disabled", "The account is disabled.");
      return user;
    } catch (err) {
      throw err instanceof DirectoryError ? err : unavailable(err);
    } finally {
      await client.unbind().catch(() => {});
    }
  }

  /** The user as the directory has it now (no password): undefined when gone. */
  async lookup(username: string): Promise<DirectoryUser | undefined> {
    const client = await this.#connect();
    try {
      const entry = await this.#findUser(client, username);
      return entry ? await this.#describe(client, entry, username) : undefined;
    } catch (err) {
      throw unavailable(err);
    } finally {
      await client.unbind().catch(() => {});
    }
  }

  /** Connects and binds the service account once (the start-up check). */
  async check(): Promise<void> {
    const client = await this.#connect();
    await client.unbind().catch(() => {});
  }
}
