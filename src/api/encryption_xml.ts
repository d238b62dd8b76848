// The ServerSideEncryptionConfiguration document of Get/PutBucketEncryption, read and written
// (the stored form is src/object/sse_default.ts).
import { S3Error } from "../http/errors.ts";
import { children, el, isBlank, leafText, parseXml, text, type XmlNode } from "../http/xml.ts";
import { type DefaultEncryption, KMS_ALGORITHMS } from "../object/sse_default.ts";
const ALGORITHMS = ["AES256", ...KMS_ALGORITHMS];

function malformed(message: string): S3Error {
  return new S3Error(
    "MalformedXML",
    `The XML you provided was not well-formed or did not validate against our published schema: ${message}`,
  );
}

type Struct = Record<string, XmlNode | XmlNode[]>;

function struct(node: XmlNode | XmlNode[] | undefined, name: string, allowed: string[]): Struct {
  if (node === undefined || isBlank(node)) throw malformed(`${name} is missing or empty.`);
  if (Array.isArray(node)) throw malformed(`${name} may appear only once.`);
  if (typeof node !== "object") throw malformed(`${name} must contain elements.`);
  for (const child of Object.keys(node)) {
    if (!allowed.includes(child)) throw malformed(`Unexpected element ${child} in ${name}.`);
  }
  return node as Struct;
}

/** Reads a ServerSideEncryptionConfiguration document (one rule, as the protocol allows). */
export function parseEncryptionConfiguration(body: string): DefaultEncryption {
  const root = parseXml(body, "ServerSideEncryptionConfiguration");
  for (const name of Object.keys(root)) {
    if (name !== "Rule") throw malformed(`Unexpected element ${name}.`);
  }
  const rules = children(root.Rule);
  if (rules.length !== 1) throw malformed("Exactly one Rule is required.");
  const rule = struct(rules[0], "Rule", ["ApplyServerSideEncryptionByDefault", "BucketKeyEnabled"]);
  const apply = struct(
    rule.ApplyServerSideEncryptionByDefault,
    "ApplyServerSideEncryptionByDefault",
    [
      "SSEAlgorithm",
      "KMSMasterKeyID",
    ],
  );
  const algorithm = leafText(apply.SSEAlgorithm, "SSEAlgorithm");
  if (algorithm === undefined || !ALGORITHMS.includes(algorithm)) {
    throw malformed("SSEAlgorithm must be AES256, aws:kms or store:kms.");
  }
  const kmsKeyId = leafText(apply.KMSMasterKeyID, "KMSMasterKeyID");
  if (kmsKeyId !== undefined && !KMS_ALGORITHMS.includes(algorithm)) {
    throw new S3Error(
      "InvalidArgument",
      "a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms or aws:kms:dsse",
    );
  }
  if (kmsKeyId !== undefined && kmsKeyId.trim() === "") {
    throw new S3Error("InvalidArgument", "KMSMasterKeyID must not be empty.");
  }
  const bucketKey = leafText(rule.BucketKeyEnabled, "BucketKeyEnabled");
  if (bucketKey !== undefined && bucketKey !== "true" && bucketKey !== "false") {
    throw malformed("BucketKeyEnabled must be true or false.");
  }
  return {
    algorithm,
    ...(kmsKeyId !== undefined ? { kmsKeyId } : {}),
    ...(bucketKey !== undefined ? { bucketKeyEnabled: bucketKey === "true" } : {}),
  };
}

/** The inner XML of a ServerSideEncryptionConfiguration document. */
export function encryptionConfigurationXml(config: DefaultEncryption): string {
  return el(
    "Rule",
    el(
      "ApplyServerSideEncryptionByDefault",
      text("SSEAlgorithm", config.algorithm),
      text("KMSMasterKeyID", config.kmsKeyId),
    ),
    text("BucketKeyEnabled", config.bucketKeyEnabled ?? false),
  );
}
