// The protocol's bucket-naming rules.
import { S3Error } from "../http/errors.ts";

export function validateBucketName(name: string): void {
  const problem = bucketNameProblem(name);
  if (problem) {
    throw new S3Error("InvalidBucketName", `The specified bucket is not valid: ${problem}.`, {
      details: { BucketName: name },
    });
  }
}

/** Names whose paths the server uses for its own interfaces. */
const RESERVED = new Set([
  "admin",
  "api",
  "browse",
  "cluster",
  "console",
  "health",
  "feed",
  "share",
  "metrics",
]);

function bucketNameProblem(name: string): string | undefined {
  if (RESERVED.has(name)) return `"${name}" is reserved for the server's own interfaces`;
  if (name.length < 3 || name.length > 63) return "names must be 3 to 63 characters long";
  if (!/^[a-z0-9.-]+$/.test(name)) {
    return "names may contain only lowercase letters, digits, dots and hyphens";
  }
  if (!/^[a-z0-9].*[a-z0-9]$/.test(name)) return "names must begin and end with a letter or digit";
  if (name.includes("..")) return "names must not contain two adjacent dots";
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return "names must not look like an IP address";
  if (name.startsWith("xn--") || name.startsWith("sthree-")) {
    return "names must not use a reserved prefix";
  }
  if (name.endsWith("-s3alias") || name.endsWith("--ol-s3") || name.endsWith(".mrap")) {
    return "names must not use a reserved suffix";
  }
  return undefined;
}
