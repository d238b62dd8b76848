// Get/PutBucketNotificationConfiguration. Destinations are environment targets (queue and topic
// ARNs) and webhook URLs, which must pass STORE_NOTIFY_WEBHOOK_ALLOW before they are stored.
import { S3Error } from "../http/errors.ts";
import { xmlDocument } from "../http/xml.ts";
import { webhookRefusal } from "../events/webhook_allow.ts";
import { notificationXml, parseNotificationConfiguration } from "./notification_xml.ts";
import { readVerifiedBody } from "./verified_body.ts";
import { bucketOf, type Handler, originOf, xmlResult } from "./context.ts";
import { inBucket } from "../object/layer.ts";

/** 100 configurations of a few hundred bytes each fit well within this. */
const MAX_BODY = 256 * 1024;

export const getBucketNotificationConfiguration: Handler = async (ctx) => {
  await bucketOf(ctx);
  const config = await ctx.notifier.config(ctx.bucket);
  return xmlResult(
    xmlDocument("NotificationConfiguration", ctx.dialect.xmlns, notificationXml(config)),
  );
};

export const putBucketNotificationConfiguration: Handler = async (ctx) => {
  await bucketOf(ctx);
  const bytes = await readVerifiedBody(ctx, MAX_BODY, { optional: true });
  const notifier = ctx.notifier;
  const config = parseNotificationConfiguration(new TextDecoder().decode(bytes), {
    region: ctx.config.region,
    hasTarget: (kind, id) => notifier.hasTarget(kind, id),
    fallback: ctx.dialect.name,
  });
  for (const rule of config.rules) {
    if (rule.kind !== "webhook") continue;
    const refusal = await webhookRefusal(new URL(rule.url!), notifier.opts.allow);
    if (refusal) {
      throw new S3Error("InvalidArgument", `The webhook URL is not allowed: ${refusal}.`, {
        details: { ArgumentName: "Url", ArgumentValue: rule.url! },
      });
    }
  }
  // A bucket deleted (and perhaps made again by someone else) while the request was read gets
  // nothing.
  const asDecided = { createdAt: (await bucketOf(ctx)).createdAt };
  await inBucket(
    ctx.bucket,
    () => notifier.configure(ctx.bucket, config, originOf(ctx), asDecided),
  );
  return { status: 200 };
};
