// Validation of the administration API's JSON input.
import { validateBucketName } from "./bucket_name.ts";
import type { BucketAccess, BucketPermission } from "../meta/store.ts";
import { ApiError } from "./json.ts";

const PERMISSIONS: BucketPermission[] = ["read", "write", "readwrite", "none"];
const USER_FIELDS = ["name", "description", "email", "bucket_access"];

function invalid(field: string, message: string): ApiError {
  return new ApiError(400, "invalid_field", `${field}: ${message}`);
}

function optionalString(body: Record<string, unknown>, field: string, max: number): string {
  const value = body[field];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") throw invalid(field, "must be a string");
  if (value.length > max) throw invalid(field, `must be at most ${max} characters`);
  return value;
}

export function validateBucketAccess(value: unknown): BucketAccess[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalid("bucket_access", "must be an array");
  const seen = new Set<string>();
  return value.map((entry, i) => {
    const field = `bucket_access[${i}]`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw invalid(field, "must be an object with bucket and permission");
    }
    const { bucket, permission, ...extra } = entry as Record<string, unknown>;
    if (Object.keys(extra).length > 0) {
      throw invalid(field, `unknown field ${Object.keys(extra)[0]}`);
    }
    if (typeof bucket !== "string") throw invalid(`${field}.bucket`, "must be a string");
    try {
      validateBucketName(bucket);
    } catch {
      throw invalid(`${field}.bucket`, "is not a valid bucket name");
    }
    if (!PERMISSIONS.includes(permission as BucketPermission)) {
      throw invalid(`${field}.permission`, `must be one of ${PERMISSIONS.join(", ")}`);
    }
    if (seen.has(bucket)) throw invalid(`${field}.bucket`, "is listed twice");
    seen.add(bucket);
    return { bucket, permission: permission as BucketPermission };
  });
}

export interface UserInput {
  name: string;
  description: string;
  email: string;
  bucketAccess: BucketAccess[];
}

export function parseUserInput(body: Record<string, unknown>): UserInput {
  for (const key of Object.keys(body)) {
    if (!USER_FIELDS.includes(key)) throw invalid(key, "is not a known field");
  }
  const name = body.name;
  if (typeof name !== "string" || !/^[A-Za-z0-9._@+=,-]{1,64}$/.test(name)) {
    throw invalid("name", "is required: 1-64 letters, digits or . _ @ + = , -");
  }
  const email = optionalString(body, "email", 254);
  if (email !== "" && !/^[^\s@]+@[^\s@]+$/.test(email)) {
    throw invalid("email", "is not an e-mail address");
  }
  return {
    name,
    description: optionalString(body, "description", 1000),
    email,
    bucketAccess: validateBucketAccess(body.bucket_access),
  };
}
