// The web console under /console: the page and its assets, sign-in and sign-out, and the API the
// page calls. That API holds no access rules of its own: storage requests (/console/api/s3/...)
// run through the protocol handler with the session's principal, so the protocol's access decision
// answers them; administration requests (/console/api/admin/...) run the /admin API's routes, for
// the administrator only.
import { createHash, timingSafeEqual } from "node:crypto";
import { adminRoute } from "../api/admin.ts";
import { ApiError, apiErrorResponse, jsonResponse, readJsonObject } from "../api/json.ts";
import type { Principal } from "../auth/principal.ts";
import { currentAudit } from "../audit/scope.ts";
import { principalName } from "../audit/recorder.ts";
import { DIALECTS } from "../http/dialect.ts";
import { isSecureRequest } from "../http/secure_transport.ts";
import { type AppDeps, handleProtocol } from "../protocol.ts";
import { serveAsset } from "./page.ts";
import { presignLink } from "./presign.ts";
import { visibleBuckets } from "./buckets.ts";
import { principalSharesRoute } from "../share/api.ts";
import { type ConsoleSession, ConsoleSessions } from "./sessions.ts";
import { ConsoleSignIn, parseSignIn } from "./sign_in.ts";

const COOKIE = "store_console";
const CSRF_HEADER = "x-console-csrf";
/** Headers of the page's own requests that must not reach the protocol handler. */
const DROPPED = ["authorization", "cookie", CSRF_HEADER, "x-amz-security-token"];

function pathOf(url: string): { path: string; query: string } {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  const target = url.slice(pathStart);
  const q = target.indexOf("?");
  return q < 0 ? { path: target, query: "" } : { path: target.slice(0, q), query: target.slice(q) };
}

function cookieOf(req: Request): string | undefined {
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ApiError(400, "invalid_path", "The path is not properly encoded.");
  }
}

function sameText(a: string, b: string): boolean {
  const digest = (t: string) => createHash("sha256").update(t).digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** The request came from a page of this server (or from no page at all: not a browser). */
function sameOrigin(req: Request): boolean {
  const origin = req.headers.get("origin");
  if (origin === null) return true;
  const host = req.headers.get("host");
  try {
    return host !== null && new URL(origin).host === host;
  } catch {
    return false;
  }
}

export class Console {
  readonly sessions: ConsoleSessions;
  readonly #signIn: ConsoleSignIn;

  constructor(private readonly deps: AppDeps) {
    this.sessions = new ConsoleSessions({
      idleMs: deps.config.console.idleTimeout * 1000,
      maxAgeMs: deps.config.console.maxAge * 1000,
    });
    this.#signIn = new ConsoleSignIn(deps);
  }

  async handle(req: Request, info: Deno.ServeHandlerInfo, client: string): Promise<Response> {
    const { path } = pathOf(req.url);
    if (!path.startsWith("/console/api/")) return serveAsset(req, path);
    const res = await this.#api(req, info, { client, route: path.slice("/console/api/".length) });
    // Session answers (the CSRF token among them) and objects are never kept by caches.
    res.headers.set("cache-control", "no-store");
    res.headers.set("x-content-type-options", "nosniff");
    return res;
  }

  async #api(
    req: Request,
    info: Deno.ServeHandlerInfo,
    { client, route }: { client: string; route: string },
  ): Promise<Response> {
    const scope = currentAudit();
    const requestId = scope?.requestId ?? crypto.randomUUID();
    try {
      if (!sameOrigin(req)) {
        throw new ApiError(403, "cross_origin", "Console requests come from the console's page.");
      }
      if (scope) scope.operation = `Console:${req.method} ${route.split("/")[0]}`;
      if (route === "config" && req.method === "GET") {
        return jsonResponse(200, { ldap: this.deps.credentials.ldap !== undefined });
      }
      if (route === "sign-in") return await this.#signInRoute(req, client);
      const session = this.#session(req);
      if (req.method !== "GET" && req.method !== "HEAD") {
        const token = req.headers.get(CSRF_HEADER);
        if (token === null || !sameText(token, session.csrf)) {
          req.body?.cancel().catch(() => {});
          throw new ApiError(403, "csrf_refused", "The request lacks the page's CSRF token.");
        }
      }
      if (route === "sign-out" && req.method === "POST") {
        this.sessions.end(session.id);
        return jsonResponse(200, { signed_out: true }, { "set-cookie": this.#cookie(req, "", 0) });
      }
      const principal = await this.#principal(session);
      if (scope) scope.principal = principalName(principal);
      if (route === "session" && req.method === "GET") {
        return jsonResponse(200, this.#sessionView(session, principal));
      }
      if (route === "buckets" && req.method === "GET") {
        return jsonResponse(200, { buckets: await visibleBuckets(this.deps, principal) });
      }
      if (route.startsWith("s3/")) return await this.#storage(req, info, principal);
      if (route === "shares" || route.startsWith("shares/")) {
        const id = route.slice("shares/".length);
        return await principalSharesRoute(req, this.deps, principal, id ? decoded(id) : undefined);
      }
      if ((route === "metrics" || route === "metrics/history") && req.method === "GET") {
        if (principal.kind !== "admin") {
          throw new ApiError(403, "admin_only", "Only the administrator may do this.");
        }
        const metrics = this.deps.ops.metrics;
        if (route === "metrics/history") {
          return jsonResponse(200, {
            interval_seconds: metrics.history.intervalMs / 1000,
            samples: metrics.history.samples(),
          });
        }
        return new Response(await metrics.render(), {
          headers: { "content-type": "text/plain; charset=utf-8" },
        });
      }
      if (route.startsWith("admin/")) return await this.#admin(req, principal);
      if (route === "presign" && req.method === "POST") {
        return jsonResponse(200, await presignLink(req, this.deps, principal, info));
      }
      throw new ApiError(404, "not_found", "No such console resource.");
    } catch (err) {
      const res = apiErrorResponse(err, requestId);
      if (err instanceof ApiError && err.code === "session_expired") {
        res.headers.append("set-cookie", this.#cookie(req, "", 0));
      }
      return res;
    }
  }

  #cookie(req: Request, value: string, maxAge: number): string {
    const secure = isSecureRequest(req.headers, this.deps.config.trustProxy) ? "; Secure" : "";
    return `${COOKIE}=${value}; Path=/console; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure}`;
  }

  async #signInRoute(req: Request, client: string): Promise<Response> {
    if (req.method !== "POST") throw new ApiError(405, "method_not_allowed", "Use POST.");
    const scope = currentAudit();
    if (scope) scope.always = true;
    if (!(req.headers.get("content-type") ?? "").startsWith("application/json")) {
      throw new ApiError(415, "json_required", "Sign in with a JSON body.");
    }
    const input = parseSignIn(await readJsonObject(req));
    if (scope) scope.key = input.name;
    const { owner, principal } = await this.#signIn.check(input, client);
    const previous = cookieOf(req);
    if (previous) this.sessions.end(previous);
    const session = this.sessions.create(owner);
    if (scope) scope.principal = principalName(principal);
    return jsonResponse(200, this.#sessionView(session, principal), {
      "set-cookie": this.#cookie(req, session.id, this.deps.config.console.maxAge),
    });
  }

  #session(req: Request): ConsoleSession {
    const id = cookieOf(req);
    const session = id ? this.sessions.touch(id) : undefined;
    if (!session) {
      req.body?.cancel().catch(() => {});
      throw new ApiError(401, "session_expired", "Sign in to the console (the session ended).");
    }
    return session;
  }

  /**
   * The session's principal as it is now: a disabled, deleted or re-keyed user, or a directory
   * user disabled or gone from the directory, is signed out; group changes apply as for the token
   * service's sessions.
   */
  async #principal(session: ConsoleSession): Promise<Principal> {
    const owner = session.owner;
    const found = owner.kind === "key"
      ? await this.deps.credentials.lookup(owner.accessKey)
      : await this.#directoryUser(owner.username, owner.known);
    if (!found || !found.principal.enabled) {
      this.sessions.end(session.id);
      throw new ApiError(401, "session_expired", "These credentials no longer sign in.");
    }
    return found.principal;
  }

  async #directoryUser(username: string, known: { dn: string; groups: string[] }) {
    const ldap = this.deps.credentials.ldap;
    const identity = ldap && await ldap.identity(username, known);
    return identity && { principal: await ldap.principal(identity) };
  }

  #sessionView(session: ConsoleSession, principal: Principal) {
    return {
      user: principal.displayName,
      access_key: principal.accessKey ?? null,
      kind: principal.kind,
      via: session.owner.kind,
      csrf: session.csrf,
      expires_at: new Date(this.sessions.endsAt(session)).toISOString(),
      idle_timeout: this.deps.config.console.idleTimeout,
    };
  }

  /** A storage request, answered by the protocol handler as the session's principal. */
  async #storage(req: Request, info: Deno.ServeHandlerInfo, principal: Principal) {
    const { path, query } = pathOf(req.url);
    const rest = path.slice("/console/api/s3".length);
    const headers = new Headers(req.headers);
    for (const name of DROPPED) headers.delete(name);
    const inner = new Request(new URL(req.url).origin + rest + query, {
      method: req.method,
      headers,
      body: req.body,
    });
    const res = await handleProtocol(inner, info, this.deps, {
      principal,
      dialect: DIALECTS.amz,
    });
    const out = new Response(res.body, res);
    // Objects are data, never pages of this origin: no script of theirs runs beside the session.
    out.headers.set("content-security-policy", "default-src 'none'; sandbox");
    if (req.method === "GET" && res.ok && rest.indexOf("/", 1) > 0) {
      out.headers.set("content-disposition", "attachment");
    }
    return out;
  }

  async #admin(req: Request, principal: Principal): Promise<Response> {
    if (principal.kind !== "admin") {
      req.body?.cancel().catch(() => {});
      throw new ApiError(403, "admin_only", "Only the administrator may do this.");
    }
    const { path, query } = pathOf(req.url);
    const inner = new Request(
      new URL(req.url).origin + "/admin" + path.slice("/console/api/admin".length) + query,
      { method: req.method, headers: { "content-type": "application/json" }, body: req.body },
    );
    return await adminRoute(inner, this.deps);
  }
}
