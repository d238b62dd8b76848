// Who is asking: the administrator, a user, or nobody.
import type { BucketAccess } from "../meta/store.ts";

export interface Principal {
  kind: "admin" | "user" | "anonymous";
  /** Stable id, used as bucket and object owner. */
  id: string;
  /** The user name (the administrator's access key for the administrator). */
  displayName: string;
  accessKey?: string;
  enabled: boolean;
  bucketAccess: BucketAccess[];
}

export const ANONYMOUS: Principal = {
  kind: "anonymous",
  id: "anonymous",
  displayName: "anonymous",
  enabled: true,
  bucketAccess: [],
};
