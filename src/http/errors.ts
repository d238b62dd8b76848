// One error type carrying the protocol's error code; the table maps each code to its status.

const STATUS: Record<string, number> = {
  AccessDenied: 403,
  AccessForbidden: 403,
  AccessControlListNotSupported: 400,
  AuthorizationHeaderMalformed: 400,
  AuthorizationQueryParametersError: 400,
  BadDigest: 400,
  BadRequest: 400,
  BucketAlreadyExists: 409,
  BucketAlreadyOwnedByYou: 409,
  BucketNotEmpty: 409,
  ConditionalRequestConflict: 409,
  EntityTooLarge: 400,
  ExpiredPresignedRequest: 403,
  ExpiredToken: 400,
  IllegalLocationConstraintException: 400,
  IncompleteBody: 400,
  InsufficientStorage: 507,
  InternalError: 500,
  InvalidAccessKeyId: 403,
  InvalidArgument: 400,
  InvalidBucketName: 400,
  InvalidBucketState: 409,
  InvalidDigest: 400,
  InvalidEncryptionAlgorithmError: 400,
  InvalidLocationConstraint: 400,
  InvalidRange: 416,
  InvalidRetentionPeriod: 400,
  InvalidBucketAclWithObjectOwnership: 400,
  InvalidRequest: 400,
  InvalidStorageClass: 400,
  InvalidTag: 400,
  InvalidTargetBucketForLogging: 400,
  InvalidToken: 400,
  InvalidURI: 400,
  KeyTooLongError: 400,
  MalformedACLError: 400,
  MalformedPolicy: 400,
  MalformedXML: 400,
  MetadataTooLarge: 400,
  MethodNotAllowed: 405,
  MissingContentLength: 411,
  MissingSecurityHeader: 400,
  NoSuchBucket: 404,
  NoSuchBucketPolicy: 404,
  NoSuchCORSConfiguration: 404,
  NoSuchWebsiteConfiguration: 404,
  ServerSideEncryptionConfigurationNotFoundError: 404,
  NoSuchLifecycleConfiguration: 404,
  ReplicationConfigurationNotFoundError: 404,
  NoSuchKey: 404,
  NoSuchVersion: 404,
  NoSuchUpload: 404,
  ObjectLockConfigurationNotFoundError: 404,
  NoSuchObjectLockConfiguration: 404,
  NoSuchTagSet: 404,
  NoSuchPublicAccessBlockConfiguration: 404,
  OwnershipControlsNotFoundError: 404,
  InvalidPart: 400,
  InvalidPartOrder: 400,
  EntityTooSmall: 400,
  InvalidPartNumber: 416,
  NotImplemented: 501,
  NotModified: 304,
  PreconditionFailed: 412,
  RequestTimeout: 400,
  RequestTimeTooSkewed: 403,
  SignatureDoesNotMatch: 403,
  UnexpectedContent: 400,
  UnresolvableGrantByEmailAddress: 400,
  ContentSHA256Mismatch: 400,
  ServiceUnavailable: 503,
  "KMS.DisabledException": 400,
  "KMS.NotFoundException": 400,
};

export class S3Error extends Error {
  readonly code: string;
  readonly status: number;
  /** Extra elements written into the XML error body (e.g. BucketName, Key). */
  readonly details: Record<string, string>;
  /** Extra response headers (e.g. Allow for MethodNotAllowed). */
  readonly headers: Record<string, string>;

  constructor(
    code: string,
    message: string,
    opts: { details?: Record<string, string>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.code = code;
    this.status = STATUS[code] ?? 400;
    this.details = opts.details ?? {};
    this.headers = opts.headers ?? {};
  }
}
