// The SelectObjectContentRequest document -> a checked SelectRequest.
import { S3Error } from "../http/errors.ts";
import { isBlank, leafText, parseXml, type XmlNode } from "../http/xml.ts";
import { checkCsvChars, type CsvInput } from "./csv_reader.ts";
import { MAX_EXPRESSION } from "./limits.ts";

export interface CsvOutput {
  quoteFields: "ALWAYS" | "ASNEEDED";
  fieldDelimiter: string;
  recordDelimiter: string;
  quote: string;
  quoteEscape: string;
}

export interface SelectRequest {
  expression: string;
  progress: boolean;
  compression: "NONE" | "GZIP" | "BZIP2";
  input:
    | { kind: "CSV"; header: "USE" | "IGNORE" | "NONE"; csv: CsvInput }
    | { kind: "JSON"; lines: boolean };
  output: { kind: "CSV"; csv: CsvOutput } | { kind: "JSON"; recordDelimiter: string };
  scanRange?: { start?: number; end?: number };
}

type Element = Record<string, XmlNode | XmlNode[]>;

/**
 * The shared XML parser leaves numeric character references as written; clients send control
 * characters that way (a newline delimiter as `&#x0A;`, line breaks in the SQL).
 */
function decodeRefs(text: string): string {
  return text.replace(/&#(?:x([0-9a-fA-F]{1,6})|([0-9]{1,7}));/g, (whole, hex, dec) => {
    const code = hex !== undefined ? parseInt(hex, 16) : Number(dec);
    return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

function leaf(node: XmlNode | XmlNode[] | undefined, name: string): string | undefined {
  const text = leafText(node, name);
  return text === undefined ? undefined : decodeRefs(text);
}

function missing(name: string): S3Error {
  return new S3Error("MissingRequiredParameter", `The request is missing ${name}.`);
}

/** A child container; undefined when absent; an empty element is an empty container. */
function element(parent: Element, name: string): Element | undefined {
  const node = parent[name];
  if (node === undefined) return undefined;
  if (typeof node === "string") {
    if (node === "" || isBlank(node)) return {};
    throw new S3Error("MalformedXML", `${name} must contain elements.`);
  }
  if (Array.isArray(node)) throw new S3Error("MalformedXML", `${name} may appear only once.`);
  return node;
}

function oneOf<T extends string>(
  value: string | undefined,
  allowed: T[],
  fallback: T,
  code: string,
  name: string,
): T {
  if (value === undefined) return fallback;
  const v = value.toUpperCase() as T;
  if (!allowed.includes(v)) {
    throw new S3Error(code, `${name} must be one of ${allowed.join(", ")}, not '${value}'.`);
  }
  return v;
}

function scanBound(node: Element, name: string): number | undefined {
  const text = leaf(node[name], name);
  if (text === undefined) return undefined;
  if (!/^\d{1,15}$/.test(text.trim())) {
    throw new S3Error("InvalidScanRange", `ScanRange ${name} must be a non-negative number.`);
  }
  return Number(text.trim());
}

function csvInput(node: Element): { header: "USE" | "IGNORE" | "NONE"; csv: CsvInput } {
  const get = (n: string) => leaf(node[n], n);
  const header = oneOf(
    get("FileHeaderInfo"),
    ["USE", "IGNORE", "NONE"],
    "NONE",
    "InvalidFileHeaderInfo",
    "FileHeaderInfo",
  );
  const csv: CsvInput = {
    fieldDelimiter: get("FieldDelimiter") ?? ",",
    recordDelimiter: get("RecordDelimiter") ?? "\n",
    quote: get("QuoteCharacter") ?? '"',
    quoteEscape: get("QuoteEscapeCharacter") ?? '"',
    // The reference's default; an empty Comments element turns comments off.
    comments: get("Comments") ?? "#",
    allowQuotedRecordDelimiter: oneOf(
      get("AllowQuotedRecordDelimiter"),
      ["TRUE", "FALSE"],
      "FALSE",
      "InvalidRequestParameter",
      "AllowQuotedRecordDelimiter",
    ) === "TRUE",
  };
  checkCsvChars({
    FieldDelimiter: csv.fieldDelimiter,
    RecordDelimiter: csv.recordDelimiter,
    QuoteCharacter: csv.quote,
    QuoteEscapeCharacter: csv.quoteEscape,
    Comments: csv.comments,
  }, "InputSerialization CSV");
  // No escape character: a doubled quote is the only escape.
  if (csv.quoteEscape === "") csv.quoteEscape = csv.quote;
  return { header, csv };
}

function csvOutput(node: Element): CsvOutput {
  const get = (n: string) => leaf(node[n], n);
  const out: CsvOutput = {
    quoteFields: oneOf(
      get("QuoteFields"),
      ["ALWAYS", "ASNEEDED"],
      "ASNEEDED",
      "InvalidQuoteFields",
      "QuoteFields",
    ),
    fieldDelimiter: get("FieldDelimiter") ?? ",",
    recordDelimiter: get("RecordDelimiter") ?? "\n",
    quote: get("QuoteCharacter") ?? '"',
    quoteEscape: get("QuoteEscapeCharacter") ?? '"',
  };
  checkCsvChars({
    FieldDelimiter: out.fieldDelimiter,
    RecordDelimiter: out.recordDelimiter,
    QuoteCharacter: out.quote,
    QuoteEscapeCharacter: out.quoteEscape,
  }, "OutputSerialization CSV");
  return out;
}

/** Exactly one of CSV, JSON (and Parquet, which is refused) must be given. */
function format(node: Element, where: string): [string, Element] {
  const names = ["CSV", "JSON", "Parquet"].filter((n) => node[n] !== undefined);
  if (names.length === 0) throw missing(`${where} CSV or JSON`);
  if (names.length > 1) {
    throw new S3Error("ObjectSerializationConflict", `${where} must name exactly one format.`);
  }
  if (names[0] === "Parquet") {
    throw new S3Error("NotImplemented", "Parquet input is not supported by this server.");
  }
  return [names[0], element(node, names[0])!];
}

export function parseSelectRequest(body: string): SelectRequest {
  if (body.trim() === "") throw new S3Error("EmptyRequestBody", "The request body is empty.");
  const root = parseXml(body, "SelectObjectContentRequest");
  const expression = leaf(root.Expression, "Expression");
  if (expression === undefined || expression.trim() === "") throw missing("Expression");
  if (new TextEncoder().encode(expression).length > MAX_EXPRESSION) {
    throw new S3Error(
      "ExpressionTooLong",
      `The SQL expression is longer than ${MAX_EXPRESSION} bytes.`,
    );
  }
  const type = leaf(root.ExpressionType, "ExpressionType");
  if (type === undefined) throw missing("ExpressionType");
  if (type !== "SQL") {
    throw new S3Error("InvalidExpressionType", `ExpressionType must be SQL, not '${type}'.`);
  }
  const progressNode = element(root, "RequestProgress");
  const enabled = progressNode ? leaf(progressNode.Enabled, "Enabled") : undefined;
  const progress = oneOf(
    enabled,
    ["TRUE", "FALSE"],
    "FALSE",
    "InvalidRequestParameter",
    "RequestProgress Enabled",
  ) === "TRUE";

  const inputNode = element(root, "InputSerialization");
  if (!inputNode) throw missing("InputSerialization");
  const compression = oneOf(
    leaf(inputNode.CompressionType, "CompressionType"),
    ["NONE", "GZIP", "BZIP2"],
    "NONE",
    "InvalidCompressionFormat",
    "CompressionType",
  );
  const [inKind, inNode] = format(inputNode, "InputSerialization");
  let input: SelectRequest["input"];
  if (inKind === "CSV") input = { kind: "CSV", ...csvInput(inNode) };
  else {
    const t = leaf(inNode.Type, "Type");
    if (t === undefined) throw missing("InputSerialization JSON Type");
    input = {
      kind: "JSON",
      lines:
        oneOf(t, ["DOCUMENT", "LINES"], "DOCUMENT", "InvalidJsonType", "JSON Type") === "LINES",
    };
  }

  const outputNode = element(root, "OutputSerialization");
  if (!outputNode) throw missing("OutputSerialization");
  const [outKind, outNode] = format(outputNode, "OutputSerialization");
  let output: SelectRequest["output"];
  if (outKind === "CSV") output = { kind: "CSV", csv: csvOutput(outNode) };
  else {
    const rd = leaf(outNode.RecordDelimiter, "RecordDelimiter") ?? "\n";
    checkCsvChars({ RecordDelimiter: rd }, "OutputSerialization JSON");
    output = { kind: "JSON", recordDelimiter: rd };
  }

  let scanRange: SelectRequest["scanRange"];
  const rangeNode = element(root, "ScanRange");
  if (rangeNode) {
    scanRange = { start: scanBound(rangeNode, "Start"), end: scanBound(rangeNode, "End") };
    if (scanRange.start === undefined && scanRange.end === undefined) {
      throw new S3Error("InvalidScanRange", "ScanRange needs Start, End or both.");
    }
    if (
      scanRange.start !== undefined && scanRange.end !== undefined &&
      scanRange.start > scanRange.end
    ) {
      throw new S3Error("InvalidScanRange", "ScanRange Start must not be after End.");
    }
    const lines = input.kind === "JSON" ? input.lines : true;
    if (compression !== "NONE" || !lines) {
      throw new S3Error(
        "UnsupportedScanRangeInput",
        "ScanRange works on uncompressed CSV and JSON LINES input only.",
      );
    }
    if (input.kind === "CSV" && input.csv.allowQuotedRecordDelimiter) {
      throw new S3Error(
        "UnsupportedScanRangeInput",
        "ScanRange cannot be used with AllowQuotedRecordDelimiter.",
      );
    }
  }
  return { expression, progress, compression, input, output, scanRange };
}
