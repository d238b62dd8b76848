// Building response XML (plain string assembly) and parsing request XML (fast-xml-parser).
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { S3Error } from "./errors.ts";

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
  // As references, so that parsers keep them (a raw CR is read back as a newline).
  "\t": "&#9;",
  "\n": "&#10;",
  "\r": "&#13;",
};

/** Characters XML 1.0 cannot carry, not even as references (unpaired surrogates included). */
const NOT_XML =
  // deno-lint-ignore no-control-regex -- control characters are exactly what it finds
  /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const NOT_XML_ALL = new RegExp(NOT_XML.source, "g");

/** Whether XML 1.0 can carry `text` (keys are refused on write otherwise). */
export function isXmlText(text: string): boolean {
  return !NOT_XML.test(text);
}

/**
 * Escapes text for XML. Characters XML 1.0 cannot carry become U+FFFD, so every document stays
 * well-formed (such keys are refused on write; `encoding-type=url` lists any key exactly).
 */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"'\t\n\r]/g, (c) => ESCAPES[c]).replace(NOT_XML_ALL, "\uFFFD");
}

/** `<name>escaped text</name>`, or nothing when the value is undefined. */
export function text(name: string, value: string | number | boolean | undefined): string {
  if (value === undefined) return "";
  return `<${name}>${escapeXml(String(value))}</${name}>`;
}

/** `<name>children</name>` where the children are already serialized. */
export function el(name: string, ...children: string[]): string {
  return `<${name}>${children.join("")}</${name}>`;
}

/** A whole response document with the XML declaration and the dialect's namespace. */
export function xmlDocument(root: string, xmlns: string | undefined, inner: string): string {
  const ns = xmlns ? ` xmlns="${xmlns}"` : "";
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${root}${ns}>${inner}</${root}>`;
}

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  // Text is never trimmed: keys like " " or "_ " must arrive as sent. Indentation between
  // elements is dropped by dropFormatting instead.
  trimValues: false,
  processEntities: true,
  // Character references (`&#xA;`, `&#13;`) are how clients send line breaks and control
  // characters in keys; this option decodes them (and `&amp;` last, so `&amp;#65;` stays text).
  htmlEntities: true,
  ignoreDeclaration: true,
});

/** No request document needs more (a lifecycle rule's And/Tag/Key is 6 levels deep). */
export const MAX_XML_DEPTH = 32;

/** The end of the markup starting at `from` (index of its `>`), skipping quoted values. */
function tagEnd(body: string, from: number): number {
  let quote = "";
  for (let i = from; i < body.length; i++) {
    const c = body[i];
    if (quote) {
      if (c === quote) quote = "";
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === ">") {
      return i;
    }
  }
  return body.length;
}

/**
 * Whether no element of `body` is nested deeper than `max`. A linear scan before any parser
 * sees the document: the parser and validator recurse per level, so a deep document would
 * otherwise exhaust the stack. Comments, CDATA and declarations do not count.
 */
export function withinXmlDepth(body: string, max = MAX_XML_DEPTH): boolean {
  let depth = 0;
  let i = body.indexOf("<");
  while (i >= 0) {
    const skipTo = body.startsWith("<!--", i)
      ? "-->"
      : body.startsWith("<![CDATA[", i)
      ? "]]>"
      : undefined;
    let end: number;
    if (skipTo) {
      end = body.indexOf(skipTo, i);
      end = end < 0 ? body.length : end + skipTo.length - 1;
    } else {
      end = tagEnd(body, i + 1);
      const kind = body[i + 1];
      // Never below zero: stray closing tags cannot buy room for deeper nesting.
      if (kind === "/") depth = Math.max(0, depth - 1);
      else if (kind !== "?" && kind !== "!" && body[end - 1] !== "/") depth++;
      if (depth > max) return false;
    }
    i = body.indexOf("<", end + 1);
  }
  return true;
}

export type XmlNode = string | { [name: string]: XmlNode | XmlNode[] };

/** True for an element holding nothing but white space: an empty container. */
export function isBlank(node: XmlNode | XmlNode[] | undefined): boolean {
  return typeof node === "string" && node.trim() === "";
}

/**
 * Removes the white space that only indents child elements (`#text` of an element that has
 * element children), in place; the text of leaf elements is left exactly as sent. Names
 * starting with `@_` are attributes and do not count as children.
 */
export function dropFormatting<T>(node: T): T {
  // An explicit stack, not recursion: request documents may nest deeply.
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const item = stack.pop();
    if (Array.isArray(item)) {
      for (const child of item) stack.push(child);
    } else if (item !== null && typeof item === "object") {
      const record = item as Record<string, unknown>;
      const names = Object.keys(record);
      const hasChildren = names.some((n) => n !== "#text" && !n.startsWith("@_"));
      const text = record["#text"];
      if (hasChildren && typeof text === "string" && text.trim() === "") delete record["#text"];
      for (const name of names) if (name !== "#text") stack.push(record[name]);
    }
  }
  return node;
}

/**
 * Parses a request document and returns the content of its root element, which must be
 * `rootName`. Anything malformed is a MalformedXML error.
 */
export function parseXml(
  body: string,
  rootName: string | string[],
): Record<string, XmlNode | XmlNode[]> {
  if (body.trim() === "") throw new S3Error("MalformedXML", "The request body is empty.");
  if (/<!DOCTYPE|<!ENTITY/i.test(body)) {
    throw new S3Error("MalformedXML", "Document type declarations are not allowed.");
  }
  if (!withinXmlDepth(body)) {
    throw new S3Error("MalformedXML", `Elements may nest at most ${MAX_XML_DEPTH} levels deep.`);
  }
  if (XMLValidator.validate(body) !== true) {
    throw new S3Error("MalformedXML", "The XML you provided was not well-formed.");
  }
  const doc = dropFormatting(parser.parse(body) as Record<string, XmlNode>);
  const roots = Object.keys(doc);
  const names = typeof rootName === "string" ? [rootName] : rootName;
  if (roots.length !== 1 || !names.includes(roots[0])) {
    throw new S3Error("MalformedXML", `The root element must be ${names.join(" or ")}.`);
  }
  const root = doc[roots[0]];
  if (isBlank(root)) return {};
  if (typeof root !== "object" || Array.isArray(root)) {
    throw new S3Error("MalformedXML", `${roots[0]} has an invalid structure.`);
  }
  return root as Record<string, XmlNode | XmlNode[]>;
}

/** The children named `name` of a parsed element, always as an array. */
export function children(node: XmlNode | XmlNode[] | undefined): XmlNode[] {
  if (node === undefined) return [];
  return Array.isArray(node) ? node : [node];
}

/** The text of a leaf element; MalformedXML when it is a structure or repeated. */
export function leafText(node: XmlNode | XmlNode[] | undefined, name: string): string | undefined {
  if (node === undefined) return undefined;
  if (typeof node !== "string") {
    throw new S3Error("MalformedXML", `${name} must be a single text element.`);
  }
  return node;
}
