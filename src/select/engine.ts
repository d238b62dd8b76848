// Runs a parsed query over an object's bytes and yields the framed response messages: Records in
// batches, Cont keep-alives and Progress while scanning, then Stats and End. Memory stays bounded
// by the slice size, one unfinished record and one output batch, whatever the object's size.
import { S3Error } from "../http/errors.ts";
import type { Query, SelectItem, Value } from "./ast.ts";
import { csvBinder, jsonBinder, walk } from "./binders.ts";
import { CsvReader, type CsvRow } from "./csv_reader.ts";
import { type Binder, Compiler } from "./eval.ts";
import {
  contEvent,
  endEvent,
  progressEvent,
  recordsEvent,
  type ScanStats,
  statsEvent,
} from "./event_stream.ts";
import { JsonReader } from "./json_reader.ts";
import { type RecordWriter, recordWriter } from "./output.ts";
import type { SelectRequest } from "./request.ts";
import { clipRecords } from "./scan_range.ts";

export interface SelectSource {
  size: number;
  open(range: { offset: number; length: number }): Promise<ReadableStream<Uint8Array> | Uint8Array>;
}

export interface EngineOptions {
  /** A Cont (or Progress) message after this long without any message. */
  keepAliveMs?: number;
  /** Records events carry about this many bytes. */
  batchBytes?: number;
}

/** Input is parsed this many bytes at a time, between which the event loop gets its turn. */
const SLICE = 256 * 1024;
const encoder = new TextEncoder();

async function* iterate(body: ReadableStream<Uint8Array> | Uint8Array): AsyncGenerator<Uint8Array> {
  if (body instanceof Uint8Array) {
    if (body.length > 0) yield body;
    return;
  }
  yield* body;
}

async function* counted(
  body: ReadableStream<Uint8Array> | Uint8Array,
  stats: ScanStats,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of iterate(body)) {
    stats.bytesScanned += chunk.length;
    yield chunk;
  }
}

/** Compressed input goes to a decoder this many bytes at a time (bounds each decode step). */
const COMPRESSED_SLICE = 64 * 1024;

async function* resliced(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) {
    for (let at = 0; at < chunk.length; at += COMPRESSED_SLICE) {
      yield chunk.subarray(at, at + COMPRESSED_SLICE);
    }
  }
}

async function* gunzip(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const stream = ReadableStream.from(resliced(source)).pipeThrough(
    new DecompressionStream("gzip") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>,
  );
  try {
    yield* stream;
  } catch (err) {
    if (err instanceof S3Error) throw err;
    throw new S3Error("InvalidCompressionFormat", "The object is not valid GZIP data.");
  }
}

function badBzip2(): S3Error {
  return new S3Error("InvalidCompressionFormat", "The object is not valid BZIP2 data.");
}

/** BZIP2 decoding: the decoder emits each block's output synchronously as input arrives. */
async function* bunzip2(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  // Loaded with the first BZIP2 query: the package and the Node streams it brings cost an idle
  // server several MiB (README, Memory).
  const { default: unbzip2 } = await import("unbzip2-stream");
  const decoder = unbzip2();
  const out: Uint8Array[] = [];
  let failed = false;
  decoder.on("data", (d: Uint8Array) => out.push(d));
  decoder.on("error", () => failed = true);
  const feed = (chunk?: Uint8Array) => {
    try {
      if (chunk) decoder.write(chunk);
      else decoder.end();
    } catch {
      failed = true;
    }
    if (failed) throw badBzip2();
  };
  for await (const chunk of resliced(source)) {
    feed(chunk);
    while (out.length > 0) yield out.shift()!;
  }
  feed();
  while (out.length > 0) yield out.shift()!;
}

function itemName(item: SelectItem, i: number): string {
  if (item.alias !== undefined) return item.alias;
  if (item.expr.kind === "path") {
    const last = item.expr.steps[item.expr.steps.length - 1];
    if (last?.kind === "name" && item.expr.steps.length > 0) return last.name;
  }
  return `_${i + 1}`;
}

/** The per-record work of a query: filter, project or aggregate, honour LIMIT. */
class Processor<R> {
  #where?: (r: R) => Value;
  #items?: ((r: R) => Value)[];
  #names: string[] = [];
  #compiler: Compiler<R>;
  #emitted = 0;

  constructor(
    readonly query: Query,
    binder: Binder<R>,
    readonly writer: RecordWriter,
    readonly star: (r: R) => void,
  ) {
    this.#compiler = new Compiler(binder, query.alias);
    if (query.where) this.#where = this.#compiler.compile(query.where);
    if (query.items !== "*") {
      this.#items = query.items.map((i) => this.#compiler.compile(i.expr));
      this.#names = query.items.map(itemName);
    }
  }

  /** False once LIMIT is reached. */
  record(r: R): boolean {
    if (this.#where && this.#where(r) !== true) return true;
    if (this.query.aggregate) {
      const aggregates = this.#compiler.aggregates;
      for (let i = 0; i < aggregates.length; i++) aggregates[i].update(r);
      return true;
    }
    if (!this.#items) this.star(r);
    else this.writer.write(this.#names, this.#items.map((g) => g(r)));
    this.#emitted++;
    return this.query.limit === undefined || this.#emitted < this.query.limit;
  }

  /** Writes the aggregate row, if the query aggregates. */
  finish(): void {
    if (!this.query.aggregate || !this.#items) return;
    this.writer.write(this.#names, this.#items.map((g) => g(undefined as R)));
  }
}

interface Reader {
  push(text: string): void;
  end(): void;
  readonly stopped: boolean;
}

function csvSetup(
  req: SelectRequest & { input: { kind: "CSV" } },
  query: Query,
  writer: RecordWriter,
): { reader: Reader; finish(): void } {
  const mode = req.input.header;
  let header: string[] | undefined;
  let sawHeader = mode === "NONE";
  let proc: Processor<CsvRow> | undefined;
  const make = () => {
    const star = (r: CsvRow) => {
      const fields = r.all();
      writer.write(fields.map((_, i) => header?.[i] ?? `_${i + 1}`), fields);
    };
    return new Processor<CsvRow>(query, csvBinder(header), writer, star);
  };
  const reader = new CsvReader(req.input.csv, (row) => {
    if (!sawHeader) {
      sawHeader = true;
      if (mode === "USE") header = row.all().map((f) => f.trim());
      return true;
    }
    proc ??= make();
    return proc.record(row);
  });
  return {
    reader,
    finish: () => {
      proc ??= make();
      proc.finish();
    },
  };
}

function jsonSetup(
  req: SelectRequest & { input: { kind: "JSON" } },
  query: Query,
  writer: RecordWriter,
): { reader: Reader; finish(): void } {
  const proc = new Processor<Value>(query, jsonBinder, writer, (r) => writer.writeValue(r));
  const path = query.from.slice(1);
  const reader = new JsonReader(req.input.lines, (doc) => {
    if (path.length === 0) return proc.record(doc);
    for (const r of walk(doc, path)) if (!proc.record(r)) return false;
    return true;
  });
  return { reader, finish: () => proc.finish() };
}

/** Checks what can be checked before any byte is read. */
export function checkQuery(req: SelectRequest, query: Query): void {
  if (query.from.length > 0 && query.from[0].kind !== "star") {
    throw new S3Error("InvalidDataSource", "The data source must be S3Object or S3Object[*].");
  }
  if (req.input.kind === "CSV" && query.from.length > 1) {
    throw new S3Error("InvalidDataSource", "CSV input has no paths below S3Object[*].");
  }
}

/** The byte range to read and how to clip it, from ScanRange. */
function plan(req: SelectRequest, size: number) {
  const range = req.scanRange;
  if (!range) return { offset: 0, length: size };
  let start = range.start ?? 0;
  let end = range.end ?? size - 1;
  if (range.start === undefined) start = Math.max(0, size - (range.end ?? 0));
  if (range.start === undefined) end = size - 1;
  end = Math.min(end, size - 1);
  const delimiter = encoder.encode(req.input.kind === "CSV" ? req.input.csv.recordDelimiter : "\n");
  if (start >= size || end < start) return { offset: 0, length: 0 };
  const base = start > 0 ? Math.max(0, start - delimiter.length) : 0;
  return {
    offset: base,
    length: size - base,
    clip: { base, end, delimiter, skipFirst: start > 0 },
  };
}

export async function* runSelect(
  req: SelectRequest,
  query: Query,
  source: SelectSource,
  opts: EngineOptions = {},
): AsyncGenerator<Uint8Array> {
  const keepAliveMs = opts.keepAliveMs ?? 1000;
  const batchBytes = opts.batchBytes ?? 128 * 1024;
  const stats: ScanStats = { bytesScanned: 0, bytesProcessed: 0, bytesReturned: 0 };
  const writer = recordWriter(req.output);
  const setup = req.input.kind === "CSV"
    ? csvSetup(req as SelectRequest & { input: { kind: "CSV" } }, query, writer)
    : jsonSetup(req as SelectRequest & { input: { kind: "JSON" } }, query, writer);
  const { reader } = setup;
  const records = (): Uint8Array => {
    const payload = encoder.encode(writer.take());
    stats.bytesReturned += payload.length;
    return recordsEvent(payload);
  };

  const p = plan(req, source.size);
  const skipAll = query.limit === 0 && !query.aggregate;
  if (p.length > 0 && !skipAll) {
    const body = await source.open({ offset: p.offset, length: p.length });
    let bytes: AsyncIterable<Uint8Array> = counted(body, stats);
    if (p.clip) bytes = clipRecords(bytes, p.clip);
    if (req.compression === "GZIP") bytes = gunzip(bytes);
    if (req.compression === "BZIP2") bytes = bunzip2(bytes);
    const decoder = new TextDecoder();
    let lastMessage = performance.now();
    let lastYield = performance.now();
    try {
      try {
        for await (const chunk of bytes) {
          for (let at = 0; at < chunk.length && !reader.stopped; at += SLICE) {
            const slice = chunk.subarray(at, at + SLICE);
            stats.bytesProcessed += slice.length;
            reader.push(decoder.decode(slice, { stream: true }));
            if (writer.size >= batchBytes) {
              yield records();
              lastMessage = performance.now();
            }
            const now = performance.now();
            if (now - lastMessage >= keepAliveMs) {
              yield req.progress ? progressEvent(stats) : contEvent();
              lastMessage = now;
            }
            // A long parse hands the event loop a turn.
            if (now - lastYield > 20) {
              await new Promise((resolve) => setTimeout(resolve, 0));
              lastYield = performance.now();
            }
          }
          if (reader.stopped) break;
        }
        if (!reader.stopped) {
          reader.push(decoder.decode());
          reader.end();
        }
      } catch (err) {
        // Records made before a failing record go out first, however the object's bytes were
        // cut into pieces: the client then sees them, then the error.
        if (writer.size > 0) yield records();
        throw err;
      }
    } finally {
      // Stops reading the object when LIMIT ends the scan early.
      if (!(body instanceof Uint8Array)) await body.cancel().catch(() => {});
    }
  }
  setup.finish();
  if (writer.size > 0) yield records();
  if (req.progress) yield progressEvent(stats);
  yield statsEvent(stats);
  yield endEvent();
}
