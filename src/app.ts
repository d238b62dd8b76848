// The server's request handler: in-flight tracking for graceful shutdown, then dispatch to the
// administration API, the service API (/api/v1), the file browser (/browse) or the storage
// protocol.
import { handleAdmin } from "./api/admin.ts";
import { handleServiceApi } from "./api/service.ts";
import { handleFeed } from "./api/feed.ts";
import { type AppDeps, handleProtocol } from "./protocol.ts";
import { handleBrowse } from "./web/browse.ts";

export type { AppDeps };

function isUnder(url: string, prefix: string): boolean {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  return pathStart >= 0 && url.startsWith(prefix, pathStart) &&
    [undefined, "/", "?"].includes(url[pathStart + prefix.length]);
}

export function createHandler(
  deps: AppDeps,
): (req: Request, info: Deno.ServeHandlerInfo) => Promise<Response> {
  return async (req, info) => {
    if (deps.inFlight.draining) {
      return new Response(null, {
        status: 503,
        headers: { connection: "close", "retry-after": "1" },
      });
    }
    deps.inFlight.enter();
    try {
      const client = (info.remoteAddr as Deno.NetAddr).hostname ?? "";
      if (isUnder(req.url, "/admin")) return await handleAdmin(req, deps, client);
      if (isUnder(req.url, "/api/v1")) return await handleServiceApi(req, deps, client);
      if (isUnder(req.url, "/feed")) return await handleFeed(req, info, deps);
      if (isUnder(req.url, "/browse")) return await handleBrowse(req, info, deps);
      return await handleProtocol(req, info, deps);
    } finally {
      deps.inFlight.exit();
    }
  };
}
