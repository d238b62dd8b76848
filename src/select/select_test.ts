// Unit tests of the parser, the evaluator, the CSV and JSON readers and the event framing.
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { S3Error } from "../http/errors.ts";
import { crc32 } from "../http/crc.ts";
import type { Value } from "./ast.ts";
import { jsonBinder } from "./binders.ts";
import { type CsvInput, CsvReader } from "./csv_reader.ts";
import { Compiler } from "./eval.ts";
import { runSelect } from "./engine.ts";
import { encodeMessage, recordsEvent } from "./event_stream.ts";
import { JsonReader } from "./json_reader.ts";
import { parseQuery } from "./parser.ts";
import { parseSelectRequest } from "./request.ts";
import { formatTimestamp, parseTimestamp } from "./time.ts";

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof S3Error) return err.code;
    throw err;
  }
  return "none";
}

Deno.test("parser: the shapes of queries", () => {
  const q = parseQuery(
    "select COUNT(*) AS x, MAX(s.b[1].c) from S3Object[*].rows[*] s where x > 1 limit 5",
  );
  assertEquals(q.alias, "s");
  assertEquals(q.limit, 5);
  assertEquals(q.from.map((s) => s.kind), ["star", "name", "star"]);
  assert(q.items !== "*" && q.items[0].alias === "x");
  assertEquals(q.aggregate, true);
  assertEquals(parseQuery("SELECT * FROM s3object").items, "*");
  assertEquals(parseQuery("SELECT x.* FROM S3Object x").items, "*");
  assert(parseQuery("SELECT x.a.* FROM S3Object x").items !== "*");
  assertEquals(
    code(() => parseQuery("SELECT a FROM S3Object WHERE a LIKE")),
    "ParseExpectedExpression",
  );
  assertEquals(code(() => parseQuery("SELECT a FROM S3Object LIMIT -1")), "EvaluatorNegativeLimit");
  assertEquals(code(() => parseQuery("SELECT a FROM t")), "InvalidDataSource");
  assertEquals(code(() => parseQuery("SELECT 'abc FROM S3Object")), "LexerInvalidLiteral");
  assertEquals(
    code(() => parseQuery("SELECT UPPER(a, b) FROM S3Object")),
    "IncorrectSqlFunctionArgumentType",
  );
  assertEquals(
    code(() => parseQuery("SELECT SUM(*) FROM S3Object")),
    "ParseUnsupportedCallWithStar",
  );
  assertEquals(
    code(() => parseQuery("SELECT a FROM S3Object extra words")),
    "ParseUnexpectedToken",
  );
  assertEquals(
    code(() => parseQuery("SELECT a, COUNT(*) FROM S3Object")),
    "UnsupportedSqlStructure",
  );
  assertEquals(
    code(() => parseQuery("SELECT EXTRACT(WEEK FROM a) FROM S3Object")),
    "ParseExpectedDatePart",
  );
});

function evalOn(expr: string, record: Value): Value {
  const q = parseQuery(`SELECT ${expr} FROM S3Object s`);
  const c = new Compiler(jsonBinder, q.alias);
  return c.compile((q.items as { expr: never }[])[0].expr)(record);
}

Deno.test("eval: operators, three-valued logic, functions", () => {
  const r = { a: 5, b: "7", n: null, t: "2021-03-04T05:06:07Z", arr: [1, 2, 3], o: { Mixed: 1 } };
  assertEquals(evalOn("s.a + CAST(s.b AS INT) * 2", r), 19);
  assertEquals(evalOn("s.a < s.b", r), true);
  assertEquals(evalOn("s.n = 1", r), null);
  assertEquals(evalOn("s.n = 1 OR TRUE", r), true);
  assertEquals(evalOn("s.n = 1 AND FALSE", r), false);
  assertEquals(evalOn("s.missing IS MISSING", r), true);
  assertEquals(evalOn("s.n IS NULL AND s.n IS NOT MISSING", r), true);
  assertEquals(evalOn("s.arr[2]", r), 3);
  assertEquals(evalOn("s.o.mixed", r), 1);
  assertEquals(evalOn('s.o."mixed"', r), undefined);
  assertEquals(evalOn("'a%b' LIKE 'a\\%b' ESCAPE '\\'", r), true);
  assertEquals(evalOn("'axb' LIKE 'a\\%b' ESCAPE '\\'", r), false);
  assertEquals(evalOn("7 / 2", r), 3);
  assertEquals(evalOn("7.5 / 2", r), 3.75);
  assertEquals(evalOn("s.a IN (1, 5)", r), true);
  assertEquals(evalOn("s.a NOT BETWEEN 1 AND 4", r), true);
  assertEquals(evalOn("EXTRACT(HOUR FROM TO_TIMESTAMP(s.t))", r), 5);
  assertEquals(
    evalOn("DATE_DIFF(month, TO_TIMESTAMP('2021-01-31T'), TO_TIMESTAMP('2021-03-30T'))", r),
    1,
  );
  assertEquals(
    evalOn("TO_STRING(DATE_ADD(month, 1, TO_TIMESTAMP('2021-01-31T')), 'yyyy-MM-dd')", r),
    "2021-02-28",
  );
  assertEquals(evalOn("TRIM(BOTH 'x' FROM 'xxhixx')", r), "hi");
  assertEquals(evalOn("SUBSTRING('hello', 0, 3)", r), "he");
  assertEquals(evalOn("CHAR_LENGTH('héllo')", r), 5);
  assertEquals(evalOn("CAST('TRUE' AS BOOL)", r), true);
  assertEquals(code(() => evalOn("CAST('x' AS FLOAT)", r)), "CastFailed");
  assertEquals(code(() => evalOn("UPPER(s.a)", r)), "IncorrectSqlFunctionArgumentType");
});

Deno.test("time: parsing and formatting", () => {
  const t = parseTimestamp("2007-02-23T12:14:33.079-08:00")!;
  assertEquals(t.toISOString(), "2007-02-23T20:14:33.079Z");
  assertEquals(formatTimestamp(t, "yyyy MMM d h:mm a XXX"), "2007 Feb 23 12:14 PM -08:00");
  assertEquals(parseTimestamp("2007T")?.toISOString(), "2007-01-01T00:00:00.000Z");
  assertEquals(parseTimestamp("2007-02-30T"), undefined);
});

const CSV: CsvInput = {
  fieldDelimiter: ",",
  recordDelimiter: "\n",
  quote: '"',
  quoteEscape: '"',
  comments: "#",
  allowQuotedRecordDelimiter: false,
};

function readCsv(pieces: string[], opts: Partial<CsvInput> = {}): string[][] {
  const out: string[][] = [];
  const r = new CsvReader({ ...CSV, ...opts }, (row) => {
    out.push(row.all());
    return true;
  });
  for (const p of pieces) r.push(p);
  r.end();
  return out;
}

Deno.test("csv reader: quotes, comments, CRLF, records split across slices", () => {
  const text = 'a,b\r\n#comment\n"x,1","say ""hi"""\n\nlast,row';
  const whole = readCsv([text]);
  assertEquals(whole, [["a", "b"], ["x,1", 'say "hi"'], ["last", "row"]]);
  // Every split point gives the same records.
  for (let i = 1; i < text.length; i++) {
    assertEquals(readCsv([text.slice(0, i), text.slice(i)]), whole, `split at ${i}`);
  }
  assertEquals(readCsv(['a,"multi\nline",b\nc'], { allowQuotedRecordDelimiter: true }), [
    ["a", "multi\nline", "b"],
    ["c"],
  ]);
  assertEquals(readCsv(["a|b;c|d;"], { fieldDelimiter: "|", recordDelimiter: ";" }), [
    ["a", "b"],
    ["c", "d"],
  ]);
  assertEquals(readCsv(["'it\\'s',x\n"], { quote: "'", quoteEscape: "\\" }), [["it's", "x"]]);
  assertEquals(code(() => readCsv(["x".repeat(1024 * 1024 + 1)])), "OverMaxRecordSize");
});

function readJson(pieces: string[], lines: boolean): Value[] {
  const out: Value[] = [];
  const r = new JsonReader(lines, (v) => {
    out.push(v);
    return true;
  });
  for (const p of pieces) r.push(p);
  r.end();
  return out;
}

Deno.test("csv reader: fields found lazily, as split would", () => {
  const got: (string | undefined)[][] = [];
  const r = new CsvReader(CSV, (row) => {
    got.push([row.field(2), row.field(0), row.field(3), row.field(1)]);
    return true;
  });
  r.push("a,b,c\n,x\nonly\n");
  r.end();
  assertEquals(got, [["c", "a", undefined, "b"], [undefined, "", undefined, "x"], [
    undefined,
    "only",
    undefined,
    undefined,
  ]]);
});

Deno.test("json reader: LINES and DOCUMENT, values split across slices", () => {
  const doc = '{"a": "}{\\"", "b": [1, {"c": 2}]}\n  [1,2] "s" 42 {"d":null}';
  const whole = readJson([doc], false);
  assertEquals(whole, [{ a: '}{"', b: [1, { c: 2 }] }, [1, 2], "s", 42, { d: null }]);
  for (let i = 1; i < doc.length; i++) {
    assertEquals(readJson([doc.slice(0, i), doc.slice(i)], false), whole, `split at ${i}`);
  }
  assertEquals(readJson(['{"a":1}\n\n{"a":2}'], true), [{ a: 1 }, { a: 2 }]);
  assertEquals(readJson(['{"a":1}\r\n{"a":2}\n', '{"a":3}\n'], true), [{ a: 1 }, { a: 2 }, {
    a: 3,
  }]);
  assertEquals(code(() => readJson(['{"a":1},{"b":2}\n{"c":3}\n'], true)), "JSONParsingError");
  assertEquals(code(() => readJson(['{"a":[{}\n{}]}\n'], true)), "JSONParsingError");
  assertEquals(code(() => readJson(["{bad}\n"], true)), "JSONParsingError");
  assertEquals(code(() => readJson(['{"a": [1, 2'], false)), "JSONParsingError");
});

Deno.test("event stream: prelude and message CRCs, typed string headers", () => {
  const msg = recordsEvent(new TextEncoder().encode("a,b\n"));
  const view = new DataView(msg.buffer);
  assertEquals(view.getUint32(0), msg.length);
  assertEquals(view.getUint32(8), crc32(msg.subarray(0, 8)));
  assertEquals(view.getUint32(msg.length - 4), crc32(msg.subarray(0, msg.length - 4)));
  const headersLength = view.getUint32(4);
  const headers = new TextDecoder().decode(msg.subarray(12, 12 + headersLength));
  assert(headers.includes(":event-type") && headers.includes("Records"));
  assertEquals(new TextDecoder().decode(msg.subarray(12 + headersLength, msg.length - 4)), "a,b\n");
  assertEquals(encodeMessage([], new Uint8Array(0)).length, 16);
});

/** The `:event-type` (or `error`) of each framed message. */
function eventTypes(messages: Uint8Array[]): string[] {
  return messages.map((m) => {
    const view = new DataView(m.buffer, m.byteOffset);
    const headers = new TextDecoder().decode(m.subarray(12, 12 + view.getUint32(4)));
    const at = headers.indexOf(":event-type");
    // name, type byte 7, two length bytes, then the value.
    return at < 0 ? "error" : /^\w+/.exec(headers.slice(at + 11 + 3))![0];
  });
}

function csvRequest() {
  return parseSelectRequest(
    `<SelectObjectContentRequest><Expression>x</Expression><ExpressionType>SQL</ExpressionType>` +
      `<InputSerialization><CSV/>` +
      `</InputSerialization><OutputSerialization><CSV/></OutputSerialization>` +
      `</SelectObjectContentRequest>`,
  );
}

Deno.test("engine: Cont keep-alives on a slow scan, LIMIT stops reading the object", async () => {
  let pulls = 0;
  let cancelled = false;
  const slow = () =>
    new ReadableStream<Uint8Array>({
      async pull(c) {
        pulls++;
        await new Promise((r) => setTimeout(r, 30));
        c.enqueue(new TextEncoder().encode("a,1\nb,2\n"));
        if (pulls === 10) c.close();
      },
      cancel() {
        cancelled = true;
      },
    });
  const req = csvRequest();
  const messages: Uint8Array[] = [];
  const source = { size: 80, open: () => Promise.resolve(slow()) };
  for await (
    const m of runSelect(req, parseQuery("SELECT * FROM S3Object WHERE _1 = 'z'"), source, {
      keepAliveMs: 50,
    })
  ) messages.push(m);
  const types = eventTypes(messages);
  assert(types.filter((t) => t === "Cont").length >= 2, types.join(","));
  assertEquals(types.slice(-2), ["Stats", "End"]);

  pulls = 0;
  const limited: Uint8Array[] = [];
  for await (const m of runSelect(req, parseQuery("SELECT _1 FROM S3Object LIMIT 3"), source)) {
    limited.push(m);
  }
  assertEquals(eventTypes(limited), ["Records", "Stats", "End"]);
  assert(cancelled && pulls < 5, `the object was read on after LIMIT (${pulls} pulls)`);
});

Deno.test("engine: records made before a failing record go out first, in one piece or many", async () => {
  const text = new TextEncoder().encode("1\n2\n3\nnot-a-number\n4\n");
  const req = csvRequest();
  const query = parseQuery("SELECT CAST(_1 AS INT) FROM S3Object");
  for (const pieces of [1, text.length]) {
    const size = Math.ceil(text.length / pieces);
    const source = {
      size: text.length,
      open: () =>
        Promise.resolve(
          new ReadableStream<Uint8Array>({
            start(c) {
              for (let at = 0; at < text.length; at += size) c.enqueue(text.slice(at, at + size));
              c.close();
            },
          }),
        ),
    };
    const messages: Uint8Array[] = [];
    const failed = await (async () => {
      for await (const m of runSelect(req, query, source)) messages.push(m);
    })().then(() => "none", (err) => err instanceof S3Error ? err.code : String(err));
    assertEquals(failed, "CastFailed", `${pieces} pieces`);
    assertEquals(eventTypes(messages), ["Records"], `${pieces} pieces`);
  }
});
