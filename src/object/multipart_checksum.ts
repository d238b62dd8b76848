// The additional checksum of an object completed from a multipart upload. An upload created with
// a checksum algorithm keeps that algorithm's checksum for every part; completing it checks the
// part checksums the request lists and combines the parts' checksums into the object's:
//   COMPOSITE    the checksum of the parts' raw checksums, written `<base64>-<parts>`;
//   FULL_OBJECT  the CRC of the whole object, combined from the part CRCs and sizes.
import { type ChecksumAlgorithm, compositeChecksum, fullObjectChecksum } from "../http/checksum.ts";
import { S3Error } from "../http/errors.ts";
import type { ChecksumRecord, PartRecord, UploadRecord } from "../meta/store.ts";

/** A part as CompleteMultipartUpload lists it, with the checksums its XML gives. */
export interface RequestedPart {
  partNumber: number;
  etag: string;
  /** Algorithm -> base64 value, from the part's `Checksum<ALGORITHM>` elements. */
  checksums?: Partial<Record<ChecksumAlgorithm, string>>;
}

/** What the Complete request itself asserts about the object (its headers). */
export interface CompleteExpectations {
  /** `x-*-checksum-type`. */
  type?: string;
  /** `x-*-checksum-<algorithm>`: the object's checksum. */
  checksum?: { algorithm: ChecksumAlgorithm; value: string };
  /** `x-*-mp-object-size`. */
  size?: number;
}

function invalidPart(part: RequestedPart, why: string): S3Error {
  return new S3Error(
    "InvalidPart",
    `One or more of the specified parts could not be found or did not match: ${why}.`,
    { details: { PartNumber: String(part.partNumber), ETag: part.etag } },
  );
}

/**
 * Checks the requested parts' checksums against the stored ones, and the request's assertions
 * against the result; returns the object's checksum (undefined when the upload has none).
 * `chosen[i]` is the stored part of `requested[i]`.
 */
export function completeChecksum(
  upload: UploadRecord,
  chosen: PartRecord[],
  requested: RequestedPart[],
  expected: CompleteExpectations = {},
): ChecksumRecord | undefined {
  const algorithm = upload.checksumAlgorithm as ChecksumAlgorithm | undefined;
  const type = upload.checksumType ?? "COMPOSITE";
  requested.forEach((r, i) => {
    const stored = chosen[i].checksum;
    for (const [name, value] of Object.entries(r.checksums ?? {})) {
      if (stored?.algorithm !== name || stored.value !== value) {
        throw invalidPart(r, `the ${name} checksum differs from the part's`);
      }
    }
    if (algorithm && type === "COMPOSITE" && r.checksums?.[algorithm] === undefined) {
      throw new S3Error(
        "InvalidRequest",
        `The upload was created using a ${algorithm.toLowerCase()} checksum. The complete ` +
          "request must include the checksum for each part. It was missing for part " +
          `${r.partNumber} in the request.`,
      );
    }
  });
  const size = chosen.reduce((n, p) => n + p.size, 0);
  if (expected.size !== undefined && expected.size !== size) {
    throw new S3Error(
      "InvalidRequest",
      `The object size given (${expected.size}) does not match the parts' total (${size}).`,
    );
  }
  if (expected.type !== undefined && (!algorithm || expected.type !== type)) {
    throw new S3Error(
      "InvalidRequest",
      `The checksum type ${expected.type} does not match the upload's (${
        algorithm ? type : "none"
      }).`,
    );
  }
  if (expected.checksum && expected.checksum.algorithm !== algorithm) {
    throw new S3Error(
      "InvalidRequest",
      `The ${expected.checksum.algorithm} checksum does not match the upload's algorithm (${
        algorithm ?? "none"
      }).`,
    );
  }
  if (!algorithm) return undefined;
  const values = chosen.map((p) => p.checksum?.algorithm === algorithm ? p.checksum.value : "");
  // Parts stored before checksums were kept have none: the object then has none either.
  if (values.includes("")) return undefined;
  const value = type === "COMPOSITE"
    ? compositeChecksum(algorithm, values)
    : fullObjectChecksum(algorithm, chosen.map((p, i) => ({ value: values[i], size: p.size })));
  if (
    expected.checksum && expected.checksum.value !== value.replace(/-\d+$/, "") &&
    expected.checksum.value !== value
  ) {
    throw new S3Error(
      "BadDigest",
      `The ${algorithm} you specified did not match the calculated checksum.`,
    );
  }
  return { algorithm, type, value, parts: values };
}
