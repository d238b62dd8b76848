// Who is asking: the administrator, a user, or nobody.

export interface Principal {
  kind: "admin" | "user" | "anonymous";
  /** Stable id, used as bucket owner. */
  id: string;
  displayName: string;
  accessKey?: string;
}

export const ANONYMOUS: Principal = {
  kind: "anonymous",
  id: "anonymous",
  displayName: "anonymous",
};

/** Looks up the secret and the principal behind an access key. */
export interface CredentialSource {
  secretFor(accessKey: string): Promise<string | undefined>;
  principalFor(accessKey: string): Promise<Principal | undefined>;
}
