// Building presigned URLs (query authentication) on behalf of a user.
import { type Dialect, q } from "../http/dialect.ts";
import {
  canonicalQuery,
  canonicalUri,
  computeSignature,
  toAmzDate,
  UNSIGNED_PAYLOAD,
  uriEncode,
} from "./sigv4.ts";

export interface PresignInput {
  dialect: Dialect;
  method: string;
  /** Scheme and authority, e.g. `http://nas.local:9000`. */
  origin: string;
  bucket: string;
  key: string;
  /** Extra query parameters (versionId, uploadId, partNumber). */
  query: [string, string][];
  /** Headers the client must send, lower-case names (content-type, content-md5). */
  headers: Record<string, string>;
  accessKey: string;
  secret: string;
  region: string;
  now: number;
  expiresIn: number;
}

export function presignUrl(input: PresignInput): string {
  const d = input.dialect;
  const amzDate = toAmzDate(input.now);
  const scope = { date: amzDate.slice(0, 8), region: input.region, service: d.services[0] };
  const host = new URL(input.origin).host;
  const headers: Record<string, string> = { ...input.headers, host };
  const signed = Object.keys(headers).sort();
  const path = `/${uriEncode(input.bucket)}/${uriEncode(input.key, true)}`;
  const query: [string, string][] = [
    ...input.query,
    [q(d, "Algorithm"), d.algorithm],
    [
      q(d, "Credential"),
      `${input.accessKey}/${scope.date}/${scope.region}/${scope.service}/${d.scopeTerminator}`,
    ],
    [q(d, "Date"), amzDate],
    [q(d, "Expires"), String(input.expiresIn)],
    [q(d, "SignedHeaders"), signed.join(";")],
  ];
  const rawQuery = query.map(([k, v]) => `${uriEncode(k)}=${uriEncode(v)}`).join("&");
  const canonicalRequest = [
    input.method,
    canonicalUri(path),
    canonicalQuery(rawQuery),
    signed.map((n) => `${n}:${headers[n].trim()}\n`).join(""),
    signed.join(";"),
    UNSIGNED_PAYLOAD,
  ].join("\n");
  const signature = computeSignature(d, input.secret, { scope, amzDate, canonicalRequest });
  return `${input.origin}${path}?${rawQuery}&${uriEncode(q(d, "Signature"))}=${signature.toHex()}`;
}
