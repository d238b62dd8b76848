import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { S3Error } from "./errors.ts";
import { type Form, formBoundary, indexOfBytes, readForm } from "./form_data.ts";

const enc = new TextEncoder();
const LIMITS = { fieldBytes: 20 * 1024, totalBytes: 64 * 1024 };
const BOUNDARY = "----formBoundary7MA4YWxkTrZu0gW";

function concat(...parts: (string | Uint8Array)[]): Uint8Array {
  const bytes = parts.map((p) => (typeof p === "string" ? enc.encode(p) : p));
  const out = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of bytes) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

function formBody(
  fields: [string, string][],
  file?: { name?: string; filename?: string; type?: string; data: Uint8Array },
  after = "",
): Uint8Array {
  const parts: (string | Uint8Array)[] = [];
  for (const [name, value] of fields) {
    parts.push(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`);
    parts.push(`${value}\r\n`);
  }
  if (file) {
    parts.push(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${file.name ?? "file"}"; ` +
        `filename="${file.filename ?? "a.bin"}"\r\n` +
        (file.type ? `Content-Type: ${file.type}\r\n` : "") + "\r\n",
    );
    parts.push(file.data, "\r\n");
  }
  parts.push(after, `--${BOUNDARY}--\r\n`);
  return concat(...parts);
}

/** The body cut into pieces of `size` bytes (the last may be shorter). */
async function* pieces(body: Uint8Array, size: number, pulled?: { count: number }) {
  for (let i = 0; i < body.length; i += size) {
    if (pulled) pulled.count++;
    yield body.slice(i, i + size);
  }
}

async function collect(form: Form): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const c of form.file!.body) chunks.push(c);
  return concat(...chunks);
}

async function rejectsCode(fn: () => Promise<unknown>, code: string): Promise<void> {
  try {
    await fn();
  } catch (err) {
    assert(err instanceof S3Error, `expected S3Error ${code}, got ${err}`);
    assertEquals(err.code, code);
    return;
  }
  throw new Error(`expected ${code}, but it succeeded`);
}

Deno.test("formBoundary reads the boundary of multipart/form-data only", () => {
  assertEquals(formBoundary(`multipart/form-data; boundary=${BOUNDARY}`), BOUNDARY);
  assertEquals(formBoundary('Multipart/Form-Data; charset=utf-8; boundary="a b"'), "a b");
  assertEquals(formBoundary("multipart/form-data"), undefined);
  assertEquals(formBoundary("application/x-www-form-urlencoded"), undefined);
  assertEquals(formBoundary(null), undefined);
  assertEquals(formBoundary(`multipart/form-data; boundary=${"x".repeat(71)}`), undefined);
});

Deno.test("indexOfBytes finds a needle across many candidate starts", () => {
  const hay = enc.encode("\r\r\n-\r\n--b\r\n--bound\r\n--boundary!");
  assertEquals(indexOfBytes(hay, enc.encode("\r\n--boundary")), 18);
  assertEquals(indexOfBytes(hay, enc.encode("\r\n--boundaryX")), -1);
  assertEquals(indexOfBytes(enc.encode("ab"), enc.encode("abc")), -1);
});

Deno.test("readForm returns fields in order and streams the file, whatever the chunking", async () => {
  // File bytes full of near-delimiters: CR LF, dashes, a boundary prefix.
  const data = concat(
    "\r\n--",
    BOUNDARY.slice(0, 10),
    "\r\n\r\n--",
    BOUNDARY.slice(0, -1),
    "x\r\n-",
    crypto.getRandomValues(new Uint8Array(5000)),
    "\r",
  );
  const body = formBody(
    [["key", "photos/${filename}"], ["x-amz-meta-note", "h\u00e9llo"], ["empty", ""]],
    { filename: "cat.jpg", type: "image/jpeg", data },
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="after"\r\n\r\nignored\r\n`,
  );
  for (const size of [1, 2, 7, 63, 1000, body.length]) {
    const form = await readForm(pieces(body, size), {
      boundary: BOUNDARY,
      fileField: "file",
      limits: LIMITS,
    });
    assertEquals(form.fields, [
      ["key", "photos/${filename}"],
      ["x-amz-meta-note", "h\u00e9llo"],
      ["empty", ""],
    ]);
    assertEquals(form.file!.filename, "cat.jpg");
    assertEquals(form.file!.contentType, "image/jpeg");
    const got = await collect(form);
    assertEquals(got.length, data.length, `chunk size ${size}`);
    assertEquals(Array.from(got), Array.from(data), `chunk size ${size}`);
  }
});

Deno.test("readForm hands the file on before the body is read whole", async () => {
  const data = crypto.getRandomValues(new Uint8Array(64 * 1024));
  const big = concat(...Array.from({ length: 64 }, () => data)); // 4 MiB
  const body = formBody([["key", "k"]], { data: big });
  const pulled = { count: 0 };
  const form = await readForm(pieces(body, 64 * 1024, pulled), {
    boundary: BOUNDARY,
    fileField: "file",
    limits: LIMITS,
  });
  const it = form.file!.body[Symbol.asyncIterator]();
  const first = await it.next();
  assert(!first.done && first.value.length > 0, "a first piece of the file");
  assert(pulled.count <= 2, `only the first chunks were read (${pulled.count})`);
  let size = first.value!.length;
  let largest = size;
  while (true) {
    const next = await it.next();
    if (next.done) break;
    size += next.value.length;
    largest = Math.max(largest, next.value.length);
  }
  assertEquals(size, big.length);
  assert(largest <= 128 * 1024, `pieces stay chunk-sized (${largest})`);
});

Deno.test("readForm accepts a preamble, transport padding and no headers on the file", async () => {
  const body = concat(
    "preamble text\r\n",
    `--${BOUNDARY}  \t\r\nContent-Disposition: form-data; name=key\r\n\r\nk1\r\n`,
    `--${BOUNDARY}\r\ncontent-disposition: form-data; name="FILE"\r\n\r\nabc\r\n`,
    `--${BOUNDARY}--`,
  );
  const form = await readForm(pieces(body, 5), {
    boundary: BOUNDARY,
    fileField: "file",
    limits: LIMITS,
  });
  assertEquals(form.fields, [["key", "k1"]]);
  assertEquals(form.file!.name, "FILE");
  assertEquals(form.file!.filename, "");
  assertEquals(new TextDecoder().decode(await collect(form)), "abc");
});

Deno.test("readForm without a file part returns the fields only", async () => {
  const form = await readForm(pieces(formBody([["key", "k"]]), 3), {
    boundary: BOUNDARY,
    fileField: "file",
    limits: LIMITS,
  });
  assertEquals(form.fields, [["key", "k"]]);
  assertEquals(form.file, undefined);
});

Deno.test("readForm limits the fields before the file", async () => {
  const opts = { boundary: BOUNDARY, fileField: "file", limits: LIMITS };
  const long = "v".repeat(20 * 1024 + 1);
  await rejectsCode(
    () => readForm(pieces(formBody([["key", long]], { data: enc.encode("x") }), 1000), opts),
    "MaxPostPreDataLengthExceeded",
  );
  // Exactly at the field limit is fine.
  const ok = await readForm(
    pieces(formBody([["key", long.slice(1)]], { data: enc.encode("x") }), 1000),
    opts,
  );
  assertEquals(ok.fields[0][1].length, 20 * 1024);
  await collect(ok);
  const many = Array.from({ length: 4 }, (_, i) => [`f${i}`, "v".repeat(18 * 1024)]) as [
    string,
    string,
  ][];
  await rejectsCode(
    () => readForm(pieces(formBody(many, { data: enc.encode("x") }), 4096), opts),
    "MaxPostPreDataLengthExceeded",
  );
  const header = concat(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="a"; x="${"h".repeat(70000)}"\r\n`,
  );
  await rejectsCode(() => readForm(pieces(header, 4096), opts), "MaxPostPreDataLengthExceeded");
});

Deno.test("readForm rejects malformed bodies", async () => {
  const opts = { boundary: BOUNDARY, fileField: "file", limits: LIMITS };
  const cases: [string, Uint8Array][] = [
    ["no boundary at all", enc.encode("just some text")],
    [
      "ends after a field's headers",
      enc.encode(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="a"\r\n\r\nva`),
    ],
    [
      "no content-disposition",
      enc.encode(`--${BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nx\r\n--${BOUNDARY}--`),
    ],
    [
      "not form-data",
      enc.encode(
        `--${BOUNDARY}\r\nContent-Disposition: attachment; name="a"\r\n\r\nx\r\n--${BOUNDARY}--`,
      ),
    ],
    ["garbage after a boundary", enc.encode(`--${BOUNDARY}xyz\r\n`)],
  ];
  for (const [what, body] of cases) {
    try {
      await readForm(pieces(body, 7), opts);
      throw new Error(`${what}: accepted`);
    } catch (err) {
      assert(err instanceof S3Error, `${what}: ${err}`);
      assertEquals(err.code, "MalformedPOSTRequest", what);
    }
  }
  // A file that never reaches its delimiter fails while streaming.
  const cut = concat(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\n`,
    new Uint8Array(10000),
  );
  const form = await readForm(pieces(cut, 1000), opts);
  await rejectsCode(() => collect(form), "MalformedPOSTRequest");
});

Deno.test("readForm limits what follows the file and releases the body on errors", async () => {
  const opts = { boundary: BOUNDARY, fileField: "file", limits: LIMITS };
  const after = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="x"\r\n\r\n` +
    "y".repeat(70 * 1024) + "\r\n";
  const form = await readForm(pieces(formBody([], { data: enc.encode("abc") }, after), 1024), opts);
  await rejectsCode(() => collect(form), "MalformedPOSTRequest");

  let released = false;
  const whole = formBody([["key", "k"]], { data: new Uint8Array(1000) });
  async function* source() {
    try {
      yield whole.slice(0, whole.length - 600);
      for (let at = whole.length - 600; at < whole.length; at += 100) {
        yield whole.slice(at, at + 100);
      }
    } finally {
      released = true;
    }
  }
  const early = await readForm(source(), opts);
  for await (const _ of early.file!.body) break; // the consumer stops after one piece
  assert(released, "the source is released when the consumer stops");
});
