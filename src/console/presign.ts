// Presigned download links made by the console for the signed-in user: signed with the user's own
// key, and refused at once when that user may not read the object.
import { ApiError, readJsonObject } from "../api/json.ts";
import type { Principal } from "../auth/principal.ts";
import { presignUrl } from "../auth/presign_url.ts";
import { DIALECTS } from "../http/dialect.ts";
import { MAX_PRESIGN_EXPIRES_S, uriEncode } from "../auth/sigv4.ts";
import { type AppDeps, handleProtocol } from "../protocol.ts";

const REFUSALS: Record<number, [string, string]> = {
  403: ["AccessDenied", "Access denied: you may not read this object."],
  404: ["NoSuchKey", "The object (or its bucket) does not exist."],
};

export async function presignLink(
  req: Request,
  deps: AppDeps,
  principal: Principal,
  info: Deno.ServeHandlerInfo,
) {
  const body = await readJsonObject(req);
  const { bucket, key, expires_in: expiresIn, version_id: versionId } = body;
  if (typeof bucket !== "string" || typeof key !== "string" || bucket === "" || key === "") {
    throw new ApiError(400, "invalid_field", "bucket and key are required.");
  }
  if (
    typeof expiresIn !== "number" || !Number.isInteger(expiresIn) || expiresIn < 1 ||
    expiresIn > MAX_PRESIGN_EXPIRES_S
  ) {
    throw new ApiError(
      400,
      "invalid_field",
      `expires_in must be 1 to ${MAX_PRESIGN_EXPIRES_S} seconds.`,
    );
  }
  if (versionId !== undefined && typeof versionId !== "string") {
    throw new ApiError(400, "invalid_field", "version_id must be a string.");
  }
  const secret = principal.accessKey && !principal.session
    ? (await deps.credentials.lookup(principal.accessKey))?.secret
    : undefined;
  if (secret === undefined) {
    throw new ApiError(
      400,
      "no_signing_key",
      "Links are signed with an access key; directory sign-ins have none.",
    );
  }
  // The link would only fail later: the same read, made now as the user, must succeed.
  const origin = new URL(req.url).origin;
  const target = `${origin}/${uriEncode(bucket)}/${uriEncode(key, true)}` +
    (versionId ? `?versionId=${uriEncode(versionId)}` : "");
  const head = await handleProtocol(new Request(target, { method: "HEAD" }), info, deps, {
    principal,
    dialect: DIALECTS.amz,
  });
  if (!head.ok) {
    const [code, message] = REFUSALS[head.status] ?? ["Refused", "The object cannot be read."];
    throw new ApiError(head.status, code, message);
  }
  const now = Date.now();
  const url = presignUrl({
    dialect: DIALECTS[deps.config.dialect],
    method: "GET",
    origin,
    bucket,
    key,
    query: versionId ? [["versionId", versionId]] : [],
    headers: {},
    accessKey: principal.accessKey!,
    secret,
    region: deps.config.region,
    now,
    expiresIn,
  });
  return { url, expires_at: new Date(now + expiresIn * 1000).toISOString() };
}
