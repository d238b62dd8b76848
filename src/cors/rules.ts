// CORS rules of a bucket and how a request is matched against them: the first rule whose
// origin, method and (for a preflight) every requested header are allowed wins.

/** One CORSRule, as validated by PutBucketCors and stored as JSON. */
export interface CorsRule {
  id?: string;
  allowedOrigins: string[];
  /** Upper-case methods: GET, PUT, POST, DELETE, HEAD. */
  allowedMethods: string[];
  /** Lower-case header patterns, each with at most one `*`. */
  allowedHeaders: string[];
  exposeHeaders: string[];
  maxAgeSeconds?: number;
}

export const CORS_METHODS = ["GET", "PUT", "POST", "DELETE", "HEAD"];

/**
 * Matches `value` against a pattern with at most one `*` (any run of characters, possibly
 * empty). `fold` compares case-insensitively (header names); origins compare exactly.
 */
export function wildcardMatch(pattern: string, value: string, fold = false): boolean {
  if (fold) {
    pattern = pattern.toLowerCase();
    value = value.toLowerCase();
  }
  const star = pattern.indexOf("*");
  if (star < 0) return pattern === value;
  const head = pattern.slice(0, star);
  const tail = pattern.slice(star + 1);
  return value.length >= head.length + tail.length && value.startsWith(head) &&
    value.endsWith(tail);
}

/** The header names of an `Access-Control-Request-Headers` value, lower-cased. */
export function requestedHeaders(value: string | null): string[] {
  if (value === null) return [];
  return value.split(",").map((s) => s.trim().toLowerCase()).filter((s) => s !== "");
}

export interface CorsQuery {
  origin: string;
  /** The actual method, or a preflight's `Access-Control-Request-Method`. */
  method: string;
  /** Only for preflights: every one must be allowed by the rule. */
  headers?: string[];
}

/** The first rule that allows the request, with the origin pattern that matched. */
export function matchRule(
  rules: readonly CorsRule[],
  query: CorsQuery,
): { rule: CorsRule; anyOrigin: boolean } | undefined {
  for (const rule of rules) {
    if (!rule.allowedMethods.includes(query.method)) continue;
    const origin = rule.allowedOrigins.find((p) => wildcardMatch(p, query.origin));
    if (origin === undefined) continue;
    const headers = query.headers ?? [];
    if (!headers.every((h) => rule.allowedHeaders.some((p) => wildcardMatch(p, h, true)))) {
      continue;
    }
    return { rule, anyOrigin: origin === "*" };
  }
  return undefined;
}

/**
 * The response headers a matched rule grants. For a preflight the requested headers are echoed
 * (they are all allowed); `*` origins are answered with `*`, others with the request's origin
 * and permission to send credentials.
 */
export function corsHeaders(
  match: { rule: CorsRule; anyOrigin: boolean },
  query: CorsQuery,
  preflight: boolean,
): Record<string, string> {
  const { rule, anyOrigin } = match;
  const out: Record<string, string> = {
    "access-control-allow-origin": anyOrigin ? "*" : query.origin,
    "access-control-allow-methods": rule.allowedMethods.join(", "),
    vary: "Origin, Access-Control-Request-Headers, Access-Control-Request-Method",
  };
  if (!anyOrigin) out["access-control-allow-credentials"] = "true";
  if (preflight && query.headers && query.headers.length > 0) {
    out["access-control-allow-headers"] = query.headers.join(", ");
  }
  if (rule.exposeHeaders.length > 0) {
    out["access-control-expose-headers"] = rule.exposeHeaders.join(", ");
  }
  if (rule.maxAgeSeconds !== undefined) {
    out["access-control-max-age"] = String(rule.maxAgeSeconds);
  }
  return out;
}
