// The listen request of MinIO's client (`mc watch`): GET /{bucket}?events=...&prefix=&suffix=
// &ping=N, answered with one JSON event message per line and `{}` lines as keep-alives.
import { S3Error } from "../http/errors.ts";
import { type FeedSource, openFeed } from "../events/feed.ts";
import { parseEventName } from "../events/names.ts";
import type { Notifier } from "../events/notifier.ts";
import type { ObjectLayer } from "../object/layer.ts";
import type { Handler } from "./context.ts";

/** `events` as given (comma-separated or repeated, either spelling); unknown names refused. */
export function eventFilter(values: string[], lenient: boolean): string[] | undefined {
  const names = values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v);
  if (names.length === 0) return undefined;
  const out: string[] = [];
  for (const name of names) {
    const parsed = parseEventName(name);
    if (parsed) out.push(parsed.name);
    else if (!lenient) {
      throw new S3Error("InvalidArgument", `The event ${name} is not supported.`);
    }
  }
  // Only names this server never emits (mc's default includes ObjectAccessed): match nothing.
  return out.length > 0 ? out : ["-"];
}

export function feedSource(
  deps: { layer: ObjectLayer; notifier: Notifier },
  mayRead: FeedSource["mayRead"],
): FeedSource {
  return {
    log: deps.layer.meta,
    wake: deps.layer.committed,
    mayRead,
    closing: deps.notifier.closing,
  };
}

/** GET /{bucket}?events=...&prefix=&suffix=&ping=N: the listen request of `mc watch`. */
export const listenBucketNotification: Handler = async (ctx) => {
  await ctx.layer.requireBucket(ctx.bucket);
  const ping = Number(ctx.query.get("ping") ?? "");
  const keepAliveMs = Number.isInteger(ping) && ping >= 1 && ping <= 3600
    ? ping * 1000
    : ctx.config.feedKeepAlive * 1000;
  // The request-level decision already allowed this bucket; the stream reads no other.
  const body = openFeed(feedSource(ctx, () => Promise.resolve(true)), {
    bucket: ctx.bucket,
    prefix: ctx.query.get("prefix") || undefined,
    suffix: ctx.query.get("suffix") || undefined,
    events: eventFilter(ctx.query.getAll("events"), true),
  }, {
    framing: "lines",
    dialect: ctx.dialect,
    region: ctx.config.region,
    keepAliveMs,
    bufferBytes: ctx.config.feedBuffer,
  });
  return { status: 200, headers: { "content-type": "application/json" }, body };
};
