// Building response XML (plain string assembly) and parsing request XML (fast-xml-parser).
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { S3Error } from "./errors.ts";

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
};

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
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
  trimValues: true,
  processEntities: true,
  htmlEntities: false,
  ignoreDeclaration: true,
});

export type XmlNode = string | { [name: string]: XmlNode | XmlNode[] };

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
  if (XMLValidator.validate(body) !== true) {
    throw new S3Error("MalformedXML", "The XML you provided was not well-formed.");
  }
  const doc = parser.parse(body) as Record<string, XmlNode>;
  const roots = Object.keys(doc);
  const names = typeof rootName === "string" ? [rootName] : rootName;
  if (roots.length !== 1 || !names.includes(roots[0])) {
    throw new S3Error("MalformedXML", `The root element must be ${names.join(" or ")}.`);
  }
  const root = doc[roots[0]];
  if (root === "") return {};
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
