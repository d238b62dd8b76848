// Shared by the transformation tests: images made with sharp, bearer tokens, the /api/v1 calls
// and waiting for jobs to end.
import sharp from "sharp";
import type { TestServer } from "./server.ts";
import type { TestUser } from "./access_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER } from "./server.ts";
import { assertEquals } from "./assert.ts";

/** A JPEG of `width`x`height` stored sideways (EXIF orientation 6) with GPS, XMP and a copyright. */
export async function exifJpeg(width: number, height: number): Promise<Uint8Array> {
  const buf = await sharp({
    create: { width, height, channels: 3, background: { r: 200, g: 30, b: 30 } },
  })
    .jpeg()
    .withMetadata({ orientation: 6 })
    .withExifMerge({
      IFD0: { Copyright: "test" },
      IFD3: { GPSLatitudeRef: "N", GPSLatitude: "51/1 30/1 3230/100" },
    })
    .withXmp(
      '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF ' +
        'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description ' +
        'xmlns:dc="http://purl.org/dc/elements/1.1/" dc:creator="tester"/></rdf:RDF></x:xmpmeta>',
    )
    .toBuffer();
  return new Uint8Array(buf);
}

/** Whether an EXIF block points at a GPS IFD (tag 0x8825, either byte order). */
export function hasGpsTag(exif: Uint8Array): boolean {
  for (let i = 0; i + 1 < exif.length; i++) {
    if ((exif[i] === 0x88 && exif[i + 1] === 0x25) || (exif[i] === 0x25 && exif[i + 1] === 0x88)) {
      return true;
    }
  }
  return false;
}

export async function png(width: number, height: number): Promise<Uint8Array> {
  return new Uint8Array(
    await sharp({ create: { width, height, channels: 3, background: "white" } }).png().toBuffer(),
  );
}

/** Random noise: a PNG that does not compress (3 bytes a pixel and more). */
export async function noisePng(width: number, height: number): Promise<Uint8Array> {
  const raw = new Uint8Array(width * height * 3);
  for (let at = 0; at < raw.length; at += 65536) {
    crypto.getRandomValues(raw.subarray(at, at + 65536));
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } }).png().toBuffer(),
  );
}

export function metadataOf(bytes: Uint8Array) {
  return sharp(bytes).metadata();
}

export async function bearer(server: TestServer, user?: TestUser): Promise<string> {
  const res = await fetch(`${server.url}/api/v1/tokens`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      access_key: user?.accessKey ?? ADMIN_USER,
      secret_key: user?.secret ?? ADMIN_PASSWORD,
    }),
  });
  assertEquals(res.status, 201);
  return (await res.json()).token;
}

export interface ApiAnswer {
  status: number;
  // deno-lint-ignore no-explicit-any
  json: any;
}

export async function api(
  server: TestServer,
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text === "" ? null : JSON.parse(text) };
}

/** Polls a job until it is done or failed (within `ms`). */
export async function settled(
  server: TestServer,
  token: string,
  id: string,
  ms = 30_000,
  // deno-lint-ignore no-explicit-any
): Promise<any> {
  const end = Date.now() + ms;
  while (true) {
    const { status, json } = await api(server, token, "GET", `/jobs/${id}`);
    assertEquals(status, 200, JSON.stringify(json));
    if (json.state === "done" || json.state === "failed") return json;
    if (Date.now() > end) throw new Error(`job ${id} still ${json.state}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The jobs of a bucket, every page. */
// deno-lint-ignore no-explicit-any
export async function allJobs(server: TestServer, token: string, bucket: string): Promise<any[]> {
  // deno-lint-ignore no-explicit-any
  const out: any[] = [];
  let after = 0;
  while (true) {
    const { status, json } = await api(
      server,
      token,
      "GET",
      `/jobs?bucket=${bucket}&limit=2&after=${after}`,
    );
    assertEquals(status, 200, JSON.stringify(json));
    out.push(...json.jobs);
    if (json.next_after === null) return out;
    after = json.next_after;
  }
}

/** Waits until every job of `bucket` has ended; returns them. */
export async function bucketSettled(
  server: TestServer,
  token: string,
  bucket: string,
  count: number,
  ms = 30_000,
  // deno-lint-ignore no-explicit-any
): Promise<any[]> {
  const end = Date.now() + ms;
  while (true) {
    const jobs = await allJobs(server, token, bucket);
    if (
      jobs.length >= count && jobs.every((j) => j.state === "done" || j.state === "failed")
    ) {
      return jobs;
    }
    if (Date.now() > end) throw new Error(`jobs not settled: ${JSON.stringify(jobs)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
