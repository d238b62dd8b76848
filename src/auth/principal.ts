// Who is asking: the administrator, a user, or nobody.
import type { BucketAccess } from "../meta/store.ts";
import type { BucketPolicy } from "./policy.ts";

export interface Principal {
  kind: "admin" | "user" | "anonymous";
  /** Stable id, used as bucket and object owner. */
  id: string;
  /** The user name (the administrator's access key for the administrator). */
  displayName: string;
  accessKey?: string;
  enabled: boolean;
  bucketAccess: BucketAccess[];
  /** Present when the request is signed with temporary credentials (token service). */
  session?: PrincipalSession;
}

export interface PrincipalSession {
  /** The session token every request must carry. */
  token: string;
  expiresAt: number;
  /** The session policy: it can only narrow what the principal may do. */
  policy?: BucketPolicy;
}

export const ANONYMOUS: Principal = {
  kind: "anonymous",
  id: "anonymous",
  displayName: "anonymous",
  enabled: true,
  bucketAccess: [],
};
