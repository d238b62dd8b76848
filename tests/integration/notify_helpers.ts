// Helpers of the notification tests: configuration documents and signed calls.
import type { TestServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";

export function webhookConfig(
  rules: {
    id: string;
    url: string;
    events: string[];
    prefix?: string;
    suffix?: string;
    token?: string;
  }[],
): string {
  const inner = rules.map((r) => {
    const filters = [
      r.prefix !== undefined
        ? `<FilterRule><Name>prefix</Name><Value>${r.prefix}</Value></FilterRule>`
        : "",
      r.suffix !== undefined
        ? `<FilterRule><Name>suffix</Name><Value>${r.suffix}</Value></FilterRule>`
        : "",
    ].join("");
    return `<WebhookConfiguration><Id>${r.id}</Id><Url>${r.url}</Url>` +
      (r.token ? `<AuthToken>${r.token}</AuthToken>` : "") +
      r.events.map((e) => `<Event>${e}</Event>`).join("") +
      (filters ? `<Filter><S3Key>${filters}</S3Key></Filter>` : "") +
      `</WebhookConfiguration>`;
  }).join("");
  return `<NotificationConfiguration>${inner}</NotificationConfiguration>`;
}

export async function putConfig(
  server: TestServer,
  bucket: string,
  body: string,
  dialect: "store" | "amz" = "store",
): Promise<Response> {
  return await signedFetch(server, {
    method: "PUT",
    path: objectPath(bucket),
    query: [["notification", ""]],
    body,
    dialect,
  });
}

export async function call(
  server: TestServer,
  method: string,
  path: string,
  opts: { query?: [string, string][]; body?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  const res = await signedFetch(server, { method, path, ...opts });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  await res.body?.cancel();
  return res;
}
