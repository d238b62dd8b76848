// Additional checksums as the object handlers see them: what a write verifies and keeps, and
// what GetObject / HeadObject return when the request asks with `x-*-checksum-mode: ENABLED`.
import {
  CHECKSUM_ALGORITHMS,
  type ChecksumAlgorithm,
  ChecksumCheck,
  checksumHeader,
  checksumResponseHeaders,
  type ChecksumType,
  isChecksumValue,
  parseAlgorithm,
  requestChecksum,
  supportsType,
} from "../http/checksum.ts";
import { h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import type { ChecksumRecord, ObjectVersion, PartRecord, UploadRecord } from "../meta/store.ts";
import type { BodyCheck } from "../object/layer.ts";
import type { CompleteExpectations } from "../object/multipart_checksum.ts";
import type { RequestContext } from "./context.ts";

export interface WriteChecksum {
  /** Checks to run over the body (none when the request carries no checksum). */
  checks: BodyCheck[];
  /** The record to keep with the new version, once the body has been verified. */
  record: () => ChecksumRecord | undefined;
  /** Response headers naming the verified checksum. */
  headers: () => Record<string, string>;
}

/** The checksum a PutObject request carries (header or trailer), for a single-part object. */
export function writeChecksum(ctx: RequestContext): WriteChecksum {
  const check: ChecksumCheck | undefined = requestChecksum(ctx.headers, ctx.dialect, ctx.body);
  const record = (): ChecksumRecord | undefined =>
    check?.value === undefined
      ? undefined
      : { algorithm: check.algorithm, type: "FULL_OBJECT", value: check.value };
  return {
    checks: check ? [check] : [],
    record,
    headers: () => {
      const r = record();
      return r ? checksumResponseHeaders(ctx.dialect, r, { type: true }) : {};
    },
  };
}

/**
 * The stored checksum headers for a read, when it asks for them: the object's checksum for a
 * whole-object read, a part's for a `partNumber` read, none for a Range read (no checksum of an
 * arbitrary range is kept).
 */
export function readChecksumHeaders(
  ctx: RequestContext,
  version: ObjectVersion,
): Record<string, string> {
  const mode = ctx.headers.get(h(ctx.dialect, "checksum-mode"));
  const checksum = version.checksum;
  if (mode?.toUpperCase() !== "ENABLED" || !checksum || ctx.headers.has("range")) return {};
  const part = ctx.query.get("partNumber");
  if (part === null || (!version.parts && part === "1")) {
    return checksumResponseHeaders(ctx.dialect, checksum, { type: true });
  }
  const value = checksum.parts?.[Number(part) - 1];
  if (value === undefined) return {};
  return checksumResponseHeaders(ctx.dialect, { ...checksum, value, type: "FULL_OBJECT" }, {
    type: false,
  });
}

/**
 * The checksum algorithm and type CreateMultipartUpload asks for (`x-*-checksum-algorithm`,
 * `x-*-checksum-type`). The type defaults to FULL_OBJECT for CRC64NVME (its only type) and to
 * COMPOSITE for the others; SHA1 and SHA256 cannot be FULL_OBJECT.
 */
export function uploadChecksumSettings(
  ctx: RequestContext,
): Pick<UploadRecord, "checksumAlgorithm" | "checksumType"> {
  const algorithmHeader = h(ctx.dialect, "checksum-algorithm");
  const typeHeader = h(ctx.dialect, "checksum-type");
  const named = ctx.headers.get(algorithmHeader);
  const typed = ctx.headers.get(typeHeader);
  if (named === null) {
    if (typed !== null) {
      throw new S3Error(
        "InvalidRequest",
        `The ${typeHeader} header can only be used with the ${algorithmHeader} header.`,
      );
    }
    return {};
  }
  const algorithm = parseAlgorithm(named, algorithmHeader);
  let type: ChecksumType = algorithm === "CRC64NVME" ? "FULL_OBJECT" : "COMPOSITE";
  if (typed !== null) {
    const upper = typed.trim().toUpperCase();
    if (upper !== "FULL_OBJECT" && upper !== "COMPOSITE") {
      throw new S3Error("InvalidRequest", `Value for ${typeHeader} header is invalid.`);
    }
    type = upper;
  }
  if (!supportsType(algorithm, type)) {
    throw new S3Error(
      "InvalidRequest",
      `The ${type} checksum type cannot be used with the ${algorithm.toLowerCase()} checksum ` +
        "algorithm.",
    );
  }
  return { checksumAlgorithm: algorithm, checksumType: type };
}

/** Response headers of CreateMultipartUpload naming the upload's checksum algorithm and type. */
export function uploadChecksumHeaders(
  ctx: RequestContext,
  upload: UploadRecord,
): Record<string, string> {
  if (!upload.checksumAlgorithm) return {};
  return {
    [h(ctx.dialect, "checksum-algorithm")]: upload.checksumAlgorithm,
    [h(ctx.dialect, "checksum-type")]: upload.checksumType ?? "COMPOSITE",
  };
}

export interface PartChecksum {
  checks: BodyCheck[];
  record: () => PartRecord["checksum"];
}

/**
 * The checksum of a part: the one it carries (header or trailer), verified; when it carries none
 * and the upload has an algorithm, that algorithm's checksum is computed. A part checksum of
 * another algorithm than the upload's is refused.
 */
export function partChecksum(
  ctx: RequestContext,
  upload: UploadRecord,
  sent = true,
): PartChecksum {
  let check = sent ? requestChecksum(ctx.headers, ctx.dialect, ctx.body) : undefined;
  const expected = upload.checksumAlgorithm as ChecksumAlgorithm | undefined;
  if (check && expected && check.algorithm !== expected) {
    throw new S3Error(
      "InvalidRequest",
      `Checksum Type mismatch occurred, expected checksum Type: ${expected.toLowerCase()}, ` +
        `actual checksum Type: ${check.algorithm.toLowerCase()}`,
    );
  }
  if (!check && expected) check = new ChecksumCheck(expected);
  return {
    checks: check ? [check] : [],
    record: () =>
      check?.value === undefined ? undefined : { algorithm: check.algorithm, value: check.value },
  };
}

/** Headers naming a part's checksum (UploadPart). */
export function partChecksumHeaders(
  ctx: RequestContext,
  part: PartRecord,
): Record<string, string> {
  const c = part.checksum;
  return c ? { [checksumHeader(ctx.dialect, c.algorithm as ChecksumAlgorithm)]: c.value } : {};
}

/** What a CompleteMultipartUpload request asserts in its headers about the object. */
export function completeExpectations(ctx: RequestContext): CompleteExpectations {
  const out: CompleteExpectations = {};
  const type = ctx.headers.get(h(ctx.dialect, "checksum-type"));
  if (type !== null) out.type = type.trim().toUpperCase();
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    const name = checksumHeader(ctx.dialect, algorithm);
    const value = ctx.headers.get(name);
    if (value === null) continue;
    if (out.checksum) {
      throw new S3Error(
        "InvalidRequest",
        `Expecting a single ${h(ctx.dialect, "checksum-")} header. Multiple checksum types ` +
          "are not allowed.",
      );
    }
    if (!isChecksumValue(algorithm, value.replace(/-\d+$/, ""))) {
      throw new S3Error("InvalidRequest", `Value for ${name} header is invalid.`);
    }
    out.checksum = { algorithm, value };
  }
  const size = ctx.headers.get(h(ctx.dialect, "mp-object-size"));
  if (size !== null) {
    if (!/^\d{1,15}$/.test(size)) {
      throw new S3Error(
        "InvalidRequest",
        `Value for ${h(ctx.dialect, "mp-object-size")} is invalid.`,
      );
    }
    out.size = Number(size);
  }
  return out;
}

/** `Checksum<ALGORITHM>` elements of a checksum, for XML results. */
export function checksumElements(
  checksum: { algorithm: string; value: string; type?: string } | undefined,
): [string, string][] {
  if (!checksum) return [];
  const out: [string, string][] = [[`Checksum${checksum.algorithm}`, checksum.value]];
  if (checksum.type) out.push(["ChecksumType", checksum.type]);
  return out;
}
