// The binary event-stream framing of SelectObjectContent responses: each message is a prelude
// (total length, headers length, CRC32 of those 8 bytes), typed headers, the payload and a CRC32
// of everything before it. Header values here are all strings (value type 7).
import { crc32 } from "../http/crc.ts";

const encoder = new TextEncoder();

function encodeHeaders(headers: [string, string][]): Uint8Array {
  const parts: Uint8Array[] = [];
  let size = 0;
  for (const [name, value] of headers) {
    const n = encoder.encode(name);
    const v = encoder.encode(value);
    const part = new Uint8Array(1 + n.length + 1 + 2 + v.length);
    part[0] = n.length;
    part.set(n, 1);
    part[1 + n.length] = 7;
    new DataView(part.buffer).setUint16(2 + n.length, v.length);
    part.set(v, 4 + n.length);
    parts.push(part);
    size += part.length;
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/** One framed message. */
export function encodeMessage(headers: [string, string][], payload: Uint8Array): Uint8Array {
  const head = encodeHeaders(headers);
  const total = 12 + head.length + payload.length + 4;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, total);
  view.setUint32(4, head.length);
  view.setUint32(8, crc32(out.subarray(0, 8)));
  out.set(head, 12);
  out.set(payload, 12 + head.length);
  view.setUint32(total - 4, crc32(out.subarray(0, total - 4)));
  return out;
}

const EMPTY = new Uint8Array(0);

function event(type: string, payload: Uint8Array, contentType?: string): Uint8Array {
  const headers: [string, string][] = [[":event-type", type]];
  if (contentType) headers.push([":content-type", contentType]);
  headers.push([":message-type", "event"]);
  return encodeMessage(headers, payload);
}

export function recordsEvent(payload: Uint8Array): Uint8Array {
  return event("Records", payload, "application/octet-stream");
}

export interface ScanStats {
  bytesScanned: number;
  bytesProcessed: number;
  bytesReturned: number;
}

function statsXml(root: string, s: ScanStats): Uint8Array {
  return encoder.encode(
    `<?xml version="1.0" encoding="UTF-8"?><${root}><BytesScanned>${s.bytesScanned}` +
      `</BytesScanned><BytesProcessed>${s.bytesProcessed}</BytesProcessed><BytesReturned>` +
      `${s.bytesReturned}</BytesReturned></${root}>`,
  );
}

export function statsEvent(s: ScanStats): Uint8Array {
  return event("Stats", statsXml("Stats", s), "text/xml");
}

export function progressEvent(s: ScanStats): Uint8Array {
  return event("Progress", statsXml("Progress", s), "text/xml");
}

export function contEvent(): Uint8Array {
  return event("Cont", EMPTY);
}

export function endEvent(): Uint8Array {
  return event("End", EMPTY);
}

/** An error after the response started: the stream ends with it. */
export function errorMessage(code: string, message: string): Uint8Array {
  return encodeMessage([
    [":error-code", code],
    [":error-message", message],
    [":message-type", "error"],
  ], EMPTY);
}
