// A directory sign-in with its rate limits: failures count per client address and per user name,
// and either over its limit refuses the attempt before the directory is asked.
import type { SignInLimiter } from "../sign_in_limiter.ts";
import { DirectoryError } from "./directory_error.ts";
import type { LdapIdentity, LdapService } from "./service.ts";

export class SignInThrottled extends Error {
  constructor(readonly retryAfter: number) {
    super("Too many failed sign-ins; try again later.");
  }
}

/** The user name's key in the per-name limiter (never read as an address). */
function nameKey(username: string): string {
  return "name/" + encodeURIComponent(username.toLowerCase());
}

/**
 * Throws SignInThrottled or DirectoryError. `addresses` undefined: the caller counts the client
 * address itself (the token API's limitedSignIn).
 */
export async function ldapSignIn(
  ldap: LdapService,
  addresses: SignInLimiter | undefined,
  client: string,
  credentials: { username: string; password: string },
): Promise<LdapIdentity> {
  const name = nameKey(credentials.username);
  const wait = Math.max(addresses?.retryAfter(client) ?? 0, ldap.userLimiter.retryAfter(name));
  if (wait > 0) throw new SignInThrottled(wait);
  try {
    const identity = await ldap.signIn(credentials.username, credentials.password);
    addresses?.succeeded(client);
    ldap.userLimiter.succeeded(name);
    return identity;
  } catch (err) {
    if (err instanceof DirectoryError && err.reason !== "unavailable") {
      addresses?.failed(client);
      ldap.userLimiter.failed(name);
    }
    throw err;
  }
}
