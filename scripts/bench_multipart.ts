// MPU (one whole multipart upload per operation) and GETRANGE for the benchmark.
import { objectPath } from "./bench_client.ts";
import { countFor, type Options, partLength } from "./bench_options.ts";
import { type Client, measure, type Result } from "./bench_run.ts";

const enc = new TextEncoder();

/** What a multipart upload of `size` bytes of `buffer` needs. */
interface Upload {
  client: Client;
  path: string;
  buffer: Uint8Array;
  size: number;
  partSize: number;
}

function partCount(size: number, partSize: number): number {
  return Math.max(1, Math.ceil(size / partSize));
}

/** The text of the first `<name>` element, with XML's predefined entities decoded. */
function xmlText(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml);
  return m?.[1].replace(
    /&quot;|&#34;|&apos;|&#39;|&lt;|&gt;|&amp;/g,
    (e) =>
      ({ "&quot;": '"', "&#34;": '"', "&apos;": "'", "&#39;": "'", "&lt;": "<", "&gt;": ">" })[
        e
      ] ?? "&",
  );
}

function escapeXml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

async function createUpload(u: Upload): Promise<string> {
  const res = await u.client.ok(
    { method: "POST", path: u.path, query: [["uploads", ""]], collect: true },
    "CreateMultipartUpload",
  );
  const uploadId = xmlText(res.text ?? "", "UploadId");
  if (!uploadId) throw new Error(`CreateMultipartUpload returned no UploadId: ${res.text}`);
  return uploadId;
}

/** Sends every part (the client's pool bounds how many are in flight); returns their ETags. */
async function uploadParts(u: Upload, uploadId: string): Promise<string[]> {
  const parts = partCount(u.size, u.partSize);
  const etags: string[] = new Array(parts);
  let failure: Error | undefined;
  const send = async (p: number) => {
    if (failure) return;
    const offset = p * u.partSize;
    const length = Math.min(u.partSize, u.size - offset);
    const query: [string, string][] = [["partNumber", String(p + 1)], ["uploadId", uploadId]];
    try {
      const res = await u.client.ok({
        method: "PUT",
        path: u.path,
        query,
        body: { buffer: u.buffer.subarray(offset, offset + length), size: length },
      }, `UploadPart ${p + 1}`);
      const etag = res.headers.get("etag");
      if (!etag) throw new Error(`UploadPart ${p + 1} returned no ETag`);
      etags[p] = etag;
    } catch (err) {
      failure ??= err instanceof Error ? err : new Error(String(err));
    }
  };
  await Promise.all(Array.from({ length: parts }, (_, p) => send(p)));
  if (failure) throw failure;
  return etags;
}

async function completeUpload(u: Upload, uploadId: string, etags: string[]): Promise<void> {
  const xml = "<CompleteMultipartUpload>" +
    etags.map((etag, p) =>
      `<Part><PartNumber>${p + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`
    ).join("") + "</CompleteMultipartUpload>";
  const body = enc.encode(xml);
  const res = await u.client.ok({
    method: "POST",
    path: u.path,
    query: [["uploadId", uploadId]],
    headers: { "content-type": "application/xml" },
    body: { buffer: body, size: body.length },
    collect: true,
  }, "CompleteMultipartUpload");
  // S3 may answer 200 and still report an error in the body.
  const text = res.text ?? "";
  if (!text.includes("<CompleteMultipartUploadResult")) {
    throw new Error(`CompleteMultipartUpload failed: ${text.slice(0, 300)}`);
  }
  const etag = (xmlText(text, "ETag") ?? "").replace(/^"|"$/g, "");
  if (!etag.endsWith(`-${etags.length}`)) {
    throw new Error(`CompleteMultipartUpload ETag "${etag}" does not end with -${etags.length}`);
  }
}

/** CreateMultipartUpload, the parts, CompleteMultipartUpload; aborts the upload on failure. */
async function multipartUpload(u: Upload): Promise<number> {
  const uploadId = await createUpload(u);
  try {
    await completeUpload(u, uploadId, await uploadParts(u, uploadId));
  } catch (err) {
    await u.client.send({ method: "DELETE", path: u.path, query: [["uploadId", uploadId]] })
      .catch(() => {});
    throw err;
  }
  return u.size;
}

/**
 * MPU at one size: each operation uploads a whole object; as many objects go at once as keep
 * about --concurrency parts in flight, which the client's pool enforces. The objects are
 * deleted afterwards (unmeasured) unless --keep.
 */
export async function benchMultipart(
  client: Client,
  opts: Options,
  size: number,
  buffer: Uint8Array,
): Promise<Result> {
  const partSize = partLength(opts, size);
  const parts = partCount(size, partSize);
  const key = (i: number) => `bench/${size}/mpu/${String(i).padStart(6, "0")}`;
  const count = countFor(opts, size, "mpu");
  const parallel = Math.ceil(opts.concurrency / parts);
  const result = await measure(
    opts,
    { op: "mpu", size, count, parallel },
    (i) =>
      multipartUpload({ client, path: objectPath(opts.bucket, key(i)), buffer, size, partSize }),
  );
  if (!opts.keep) {
    await measure(opts, { op: "delete", size, count: result.ops + result.errors }, async (i) => {
      await client.send({ method: "DELETE", path: objectPath(opts.bucket, key(i)) });
      return 0;
    });
  }
  return result;
}

/** One GET of `length` bytes at a random offset of the object at `path`, checked. */
export async function rangedGet(
  client: Client,
  path: string,
  size: number,
  length: number,
): Promise<number> {
  const offset = Math.floor(Math.random() * (size - length + 1));
  const last = offset + length - 1;
  const res = await client.ok(
    { method: "GET", path, headers: { range: `bytes=${offset}-${last}` } },
    "Ranged GET",
  );
  if (res.status !== 206) throw new Error(`Ranged GET answered ${res.status}, expected 206`);
  const range = res.headers.get("content-range");
  if (range !== `bytes ${offset}-${last}/${size}`) {
    throw new Error(`Ranged GET of ${offset}-${last} answered Content-Range "${range}"`);
  }
  if (res.length !== length) throw new Error(`Ranged GET returned ${res.length} of ${length} B`);
  return length;
}
