// How a website request is answered, decided from the configuration alone: redirects that apply
// before any lookup (RedirectAllRequestsTo, rules without an error-code condition), the key an
// address serves (index documents for folders), and redirects after an error.
import type { RoutingRule, WebsiteConfig } from "./config.ts";

/** Where the site is served: `/website/{bucket}/` by path, `/` by Host. */
export interface SiteAddress {
  scheme: "http" | "https";
  /** The request's Host header (with its port). */
  host: string;
  /** Path prefix of the site, ending in `/`. */
  root: string;
}

export interface RedirectAnswer {
  status: number;
  location: string;
}

/** Each path segment percent-encoded, slashes kept. */
export function encodeKey(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}

function matchesPrefix(rule: RoutingRule, key: string): boolean {
  return key.startsWith(rule.condition?.keyPrefixEquals ?? "");
}

/** A redirect that applies before the object is looked up. */
export function redirectBeforeLookup(
  config: WebsiteConfig,
  key: string,
  site: SiteAddress,
): RedirectAnswer | undefined {
  if (config.redirectAll) {
    const all = config.redirectAll;
    return {
      status: 301,
      location: `${all.protocol ?? site.scheme}://${all.hostName}/${encodeKey(key)}`,
    };
  }
  const rule = config.routingRules.find((r) =>
    r.condition?.httpErrorCodeReturnedEquals === undefined && matchesPrefix(r, key)
  );
  return rule ? redirectFor(rule, key, site) : undefined;
}

/** A redirect for a request that ended in error `status`, when a rule asks for one. */
export function redirectAfterError(
  config: WebsiteConfig,
  key: string,
  status: number,
  site: SiteAddress,
): RedirectAnswer | undefined {
  const rule = config.routingRules.find((r) =>
    r.condition?.httpErrorCodeReturnedEquals === String(status) && matchesPrefix(r, key)
  );
  return rule ? redirectFor(rule, key, site) : undefined;
}

/** The redirect of `rule` for `key`: the new key, protocol, host and status. */
export function redirectFor(rule: RoutingRule, key: string, site: SiteAddress): RedirectAnswer {
  const r = rule.redirect;
  const prefix = rule.condition?.keyPrefixEquals ?? "";
  const newKey = r.replaceKeyWith ??
    (r.replaceKeyPrefixWith !== undefined
      ? r.replaceKeyPrefixWith + key.slice(prefix.length)
      : key);
  const scheme = r.protocol ?? site.scheme;
  const location = r.hostName !== undefined
    ? `${scheme}://${r.hostName}/${encodeKey(newKey)}`
    : `${scheme}://${site.host}${site.root}${encodeKey(newKey)}`;
  return { status: Number(r.httpRedirectCode ?? 301), location };
}

/** The key an address serves: a folder (empty, or ending in `/`) serves its index document. */
export function servedKey(config: WebsiteConfig, key: string): string {
  return key === "" || key.endsWith("/") ? key + (config.indexSuffix ?? "") : key;
}
