// The streaming-upload decoder on handcrafted bodies, including the protocol documentation's
// signed examples (66560 bytes of "a" in chunks of 65536 and 1024 bytes).
import { createHmac } from "node:crypto";
import {
  assert,
  assertBytesEqual,
  assertEquals,
  assertRejectsCode,
} from "../../tests/integration/assert.ts";
import { chunkSigner } from "../auth/sigv4.ts";
import { type ChunkedOptions, decodeChunked, parseChunkLine } from "./chunked_body.ts";
import { DIALECTS } from "./dialect.ts";

const enc = new TextEncoder();
const DATA = new Uint8Array(66560).fill(0x61);
const SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const DOC_SIGNATURES = [
  "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
  "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
  "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
];
const TRAILER_SIGNATURES = [
  "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
  "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
  "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
];
const TRAILER = "x-amz-checksum-crc32c:sOO8/Q==\r\n" +
  "x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n";

function docKey(): Uint8Array {
  let key: Uint8Array = enc.encode("AWS4" + SECRET);
  for (const part of ["20130524", "us-east-1", "s3", "aws4_request"]) {
    key = createHmac("sha256", key).update(part).digest();
  }
  return key;
}

function docSigner(seed: string) {
  return chunkSigner(DIALECTS.amz, {
    key: docKey(),
    amzDate: "20130524T000000Z",
    credential: {
      accessKey: "AKIAIOSFODNN7EXAMPLE",
      date: "20130524",
      region: "us-east-1",
      service: "s3",
    },
    seed,
  });
}

function concat(...parts: (string | Uint8Array)[]): Uint8Array {
  const bytes = parts.map((p) => typeof p === "string" ? enc.encode(p) : p);
  const out = new Uint8Array(bytes.reduce((n, b) => n + b.byteLength, 0));
  bytes.reduce((at, b) => (out.set(b, at), at + b.byteLength), 0);
  return out;
}

/** The documented body: two data chunks and the final empty one, then `tail`. */
function docBody(signatures: string[], tail = "\r\n"): Uint8Array {
  return concat(
    `10000;chunk-signature=${signatures[0]}\r\n`,
    DATA.subarray(0, 65536),
    `\r\n400;chunk-signature=${signatures[1]}\r\n`,
    DATA.subarray(65536),
    `\r\n0;chunk-signature=${signatures[2]}\r\n`,
    tail,
  );
}

async function* pieces(body: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < body.byteLength; at += size) yield body.slice(at, at + size);
}

function options(over: Partial<ChunkedOptions> = {}): ChunkedOptions {
  return {
    trailer: false,
    decodedLength: DATA.byteLength,
    trailerSignatureName: "x-amz-trailer-signature",
    ...over,
  };
}

async function decode(
  body: Uint8Array,
  opts: ChunkedOptions,
  pieceSize = 4096,
): Promise<{ data: Uint8Array; trailers: Headers }> {
  const trailers = new Headers();
  const parts: Uint8Array[] = [];
  for await (const p of decodeChunked(pieces(body, pieceSize), opts, trailers)) parts.push(p);
  return { data: concat(...parts), trailers };
}

const SEED = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
const TRAILER_SEED = "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e";

Deno.test("chunked: the documented signed upload decodes, split anywhere", async () => {
  const body = docBody(DOC_SIGNATURES);
  assertEquals(body.byteLength, 66824);
  for (const size of [1, 7, 100, 65536, body.byteLength]) {
    const slow = size === 1 ? body.subarray(0, body.byteLength) : body;
    const { data } = await decode(slow, options({ signer: docSigner(SEED) }), size);
    assertBytesEqual(data, DATA);
  }
});

Deno.test("chunked: a wrong chunk signature anywhere in the chain is refused", async () => {
  for (let i = 0; i < 3; i++) {
    const signatures = [...DOC_SIGNATURES];
    signatures[i] = signatures[i].slice(0, 63) + (signatures[i].endsWith("0") ? "1" : "0");
    await assertRejectsCode(
      () => decode(docBody(signatures), options({ signer: docSigner(SEED) })),
      "SignatureDoesNotMatch",
    );
  }
  const changed = docBody(DOC_SIGNATURES);
  changed[5000] = 0x62;
  await assertRejectsCode(
    () => decode(changed, options({ signer: docSigner(SEED) })),
    "SignatureDoesNotMatch",
  );
  // Another seed (another request's signature) breaks the first link.
  await assertRejectsCode(
    () => decode(docBody(DOC_SIGNATURES), options({ signer: docSigner("0".repeat(64)) })),
    "SignatureDoesNotMatch",
  );
  const unsignedChunk = new TextDecoder("latin1").decode(docBody(DOC_SIGNATURES))
    .replace(`;chunk-signature=${DOC_SIGNATURES[1]}`, "");
  await assertRejectsCode(
    () => decode(enc.encode(unsignedChunk), options({ signer: docSigner(SEED) })),
    "SignatureDoesNotMatch",
  );
});

Deno.test("chunked: the documented signed trailer verifies; a changed trailer is refused", async () => {
  const body = docBody(TRAILER_SIGNATURES, TRAILER + "\r\n");
  const opts = options({ signer: docSigner(TRAILER_SEED), trailer: true });
  const { data, trailers } = await decode(body, opts, 777);
  assertBytesEqual(data, DATA);
  assertEquals(trailers.get("x-amz-checksum-crc32c"), "sOO8/Q==");
  // LF-terminated trailer lines with an empty line before the signature are accepted too.
  const variant = TRAILER.replace("\r\nx-amz-trailer-signature", "\n\r\nx-amz-trailer-signature");
  await decode(docBody(TRAILER_SIGNATURES, variant + "\r\n"), opts);
  const changed = TRAILER.replace("sOO8/Q==", "sOO8/A==");
  await assertRejectsCode(
    () => decode(docBody(TRAILER_SIGNATURES, changed + "\r\n"), opts),
    "SignatureDoesNotMatch",
  );
  const unsigned = TRAILER.replace(/x-amz-trailer-signature:.*\r\n/, "");
  await assertRejectsCode(
    () => decode(docBody(TRAILER_SIGNATURES, unsigned + "\r\n"), opts),
    "SignatureDoesNotMatch",
  );
});

/** An unsigned framed body (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`) with chunks of `size`. */
function unsignedBody(data: Uint8Array, size: number, trailer: string): Uint8Array {
  const parts: (string | Uint8Array)[] = [];
  for (let at = 0; at < data.byteLength; at += size) {
    const chunk = data.subarray(at, at + size);
    parts.push(`${chunk.byteLength.toString(16)}\r\n`, chunk, "\r\n");
  }
  parts.push("0\r\n", trailer);
  return concat(...parts);
}

Deno.test("chunked: unsigned chunks with a trailer decode; the trailer is kept", async () => {
  const body = unsignedBody(DATA, 8192, "x-amz-checksum-crc32:AAAAAA==\r\n\r\n");
  const { data, trailers } = await decode(body, options({ trailer: true }), 1000);
  assertBytesEqual(data, DATA);
  assertEquals(trailers.get("x-amz-checksum-crc32"), "AAAAAA==");
  // With nothing to trail, a body may end right after the last chunk.
  const bare = await decode(unsignedBody(DATA, 8192, ""), options({ trailer: true }));
  assertEquals(bare.data.byteLength, DATA.byteLength);
  assertEquals([...bare.trailers.keys()], []);
  const empty = await decode(enc.encode("0\r\n\r\n"), options({ trailer: true, decodedLength: 0 }));
  assertEquals(empty.data.byteLength, 0);
});

Deno.test("chunked: chunk extensions are parsed per RFC 9112", () => {
  const plain = parseChunkLine("1a2B");
  assertEquals(plain.size, 0x1a2b);
  assertEquals(plain.extensions.size, 0);
  const ext = parseChunkLine('400 ;chunk-signature=abc; other = "quoted value";flag');
  assertEquals(ext.size, 0x400);
  assertEquals(ext.extensions.get("chunk-signature"), "abc");
  assertEquals(ext.extensions.get("other"), "quoted value");
  assertEquals(ext.extensions.get("flag"), "");
  for (
    const bad of [
      "",
      "xyz",
      "-1",
      "0x10",
      "1 2",
      "10;=x",
      "10;a=b c",
      "10;a=1;a=2",
      "1000000000000",
    ]
  ) {
    let threw = false;
    try {
      parseChunkLine(bad);
    } catch (err) {
      threw = (err as { code?: string }).code === "InvalidRequest";
    }
    assert(threw, `chunk line ${JSON.stringify(bad)} must be refused`);
  }
});

Deno.test("chunked: malformed framing is refused", async () => {
  const trailing = options({ trailer: true, decodedLength: 5 });
  const cases: [string, string, string][] = [
    ["data not followed by CRLF", "5\r\nhelloXX0\r\n\r\n", "InvalidRequest"],
    ["a bare LF after the size", "5\nhello\r\n0\r\n\r\n", "InvalidRequest"],
    ["a size that is not hex", "zz\r\nhello\r\n0\r\n\r\n", "InvalidRequest"],
    ["bytes after the end", "5\r\nhello\r\n0\r\n\r\nextra", "InvalidRequest"],
    [
      "a trailer line that is not a header",
      "5\r\nhello\r\n0\r\nnot a header\r\n\r\n",
      "InvalidRequest",
    ],
    ["a chunk cut short", "5\r\nhel", "IncompleteBody"],
    ["no last chunk", "5\r\nhello\r\n", "IncompleteBody"],
    ["a missing CRLF at the end of the data", "5\r\nhello", "IncompleteBody"],
    ["a size line cut short", "5\r\nhello\r\n0", "IncompleteBody"],
    ["more bytes than declared", "6\r\nhello!\r\n0\r\n\r\n", "IncompleteBody"],
    ["fewer bytes than declared", "4\r\nhell\r\n0\r\n\r\n", "IncompleteBody"],
  ];
  for (const [name, body, code] of cases) {
    await assertRejectsCode(() => decode(enc.encode(body), trailing, 3), code).catch((err) => {
      throw new Error(`${name}: ${err.message}`);
    });
  }
  // Without a trailer the last chunk must be followed by an empty line.
  await assertRejectsCode(
    () => decode(enc.encode("5\r\nhello\r\n0\r\nx-a:b\r\n\r\n"), options({ decodedLength: 5 })),
    "InvalidRequest",
  );
});

Deno.test("chunked: an oversized size line or trailer is refused without reading on", async () => {
  const long = "5;" + "x".repeat(5000) + "\r\nhello\r\n0\r\n\r\n";
  await assertRejectsCode(
    () => decode(enc.encode(long), options({ decodedLength: 5 }), 1024),
    "InvalidRequest",
  );
  // No line break at all: refused once the line limit is passed, not at the end of the stream.
  let pulled = 0;
  async function* endless(): AsyncGenerator<Uint8Array> {
    while (true) {
      pulled++;
      yield new Uint8Array(1024).fill(0x31);
    }
  }
  await assertRejectsCode(async () => {
    for await (const _ of decodeChunked(endless(), options(), new Headers())) { /* drain */ }
  }, "InvalidRequest");
  assert(pulled < 10, `read ${pulled} pieces`);
  const bigTrailer = "5\r\nhello\r\n0\r\n" + `x-a:${"v".repeat(20000)}\r\n\r\n`;
  await assertRejectsCode(
    () => decode(enc.encode(bigTrailer), options({ trailer: true, decodedLength: 5 })),
    "InvalidRequest",
  );
});
