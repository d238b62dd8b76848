// What the rest of the server needs to know of the directory (directory.ts) without loading its
// LDAP client, which main.ts loads only when directory sign-in is on.

export interface DirectoryUser {
  dn: string;
  email: string;
  displayName: string;
  /** Group names, lower case. */
  groups: string[];
  disabled: boolean;
}

/** Why a sign-in failed: wrong name or password, a disabled account, or no directory. */
export class DirectoryError extends Error {
  constructor(readonly reason: "invalid" | "disabled" | "unavailable", message: string) {
    super(message);
  }
}
