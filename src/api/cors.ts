// Get/Put/DeleteBucketCors, the unauthenticated preflight (OPTIONS on a bucket or object path)
// and the CORS headers of actual requests that carry an Origin header.
import { corsHeaders, type CorsQuery, matchRule, requestedHeaders } from "../cors/rules.ts";
import { storedCorsRules } from "../cors/stored.ts";
import { corsXml, MAX_CORS_BYTES, parseCorsConfiguration } from "../cors/xml.ts";
import { S3Error } from "../http/errors.ts";
import type { MetaStore } from "../meta/store.ts";
import {
  bucketOf,
  deleteBucketConfig,
  type Handler,
  putBucketConfig,
  xmlResult,
} from "./context.ts";
import { readVerifiedBody } from "./verified_body.ts";

export const getBucketCors: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const rules = await storedCorsRules(ctx.layer.meta, bucket.name);
  if (rules === undefined) {
    throw new S3Error("NoSuchCORSConfiguration", "The CORS configuration does not exist", {
      details: { BucketName: bucket.name },
    });
  }
  return xmlResult(corsXml(rules, ctx.dialect.xmlns));
};

/** Replaces the bucket's rules; Content-MD5 (or a checksum header) is required. */
export const putBucketCors: Handler = async (ctx) => {
  await bucketOf(ctx);
  const bytes = await readVerifiedBody(ctx, MAX_CORS_BYTES);
  const rules = parseCorsConfiguration(new TextDecoder().decode(bytes));
  await putBucketConfig(ctx, "cors", JSON.stringify(rules));
  return { status: 200 };
};

export const deleteBucketCors: Handler = async (ctx) => {
  await deleteBucketConfig(ctx, "cors");
  return { status: 204 };
};

function forbidden(message: string, details: Record<string, string>): S3Error {
  return new S3Error("AccessForbidden", message, { details });
}

/**
 * Answers a preflight. No authentication and no access decision: the answer only says what the
 * bucket's rules allow. A bucket without rules and a missing bucket get the same 403, so a
 * preflight does not reveal which names exist.
 */
export async function preflight(
  headers: Headers,
  target: { meta: MetaStore; bucket: string; key?: string },
): Promise<Record<string, string>> {
  const origin = headers.get("origin");
  if (origin === null) {
    throw new S3Error("BadRequest", "Insufficient information. Origin request header needed.");
  }
  const method = headers.get("access-control-request-method");
  if (method === null) {
    throw new S3Error("BadRequest", "Invalid Access-Control-Request-Method: null");
  }
  const details = { Method: method, ResourceType: target.key ? "OBJECT" : "BUCKET" };
  const rules = await storedCorsRules(target.meta, target.bucket);
  if (rules === undefined) {
    throw forbidden("CORSResponse: CORS is not enabled for this bucket.", details);
  }
  const query: CorsQuery = {
    origin,
    method,
    headers: requestedHeaders(headers.get("access-control-request-headers")),
  };
  const match = matchRule(rules, query);
  if (!match) {
    throw forbidden(
      "CORSResponse: This CORS request is not allowed. The origin, the requested method or " +
        "one of the requested headers is not allowed by the bucket's CORS rules.",
      details,
    );
  }
  return corsHeaders(match, query, true);
}

/**
 * Adds the matching rule's headers to the response of an actual request from `origin`. Rules
 * are read only for requests that carry an Origin header; `Vary: Origin` marks every response
 * of a bucket that has rules, matched or not, so caches keep the answers apart.
 */
export async function addCorsHeaders(
  response: Headers,
  request: { meta: MetaStore; bucket: string; origin: string; method: string },
): Promise<void> {
  const rules = await storedCorsRules(request.meta, request.bucket);
  if (rules === undefined) return;
  const query = { origin: request.origin, method: request.method };
  const match = matchRule(rules, query);
  if (!match) {
    response.append("vary", "Origin");
    return;
  }
  for (const [name, value] of Object.entries(corsHeaders(match, query, false))) {
    response.set(name, value);
  }
}
