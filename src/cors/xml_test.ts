// The CORSConfiguration document: accepted shapes, the protocol's errors, and the round trip.
import { assertEquals, assertMatch } from "../../tests/integration/assert.ts";
import { S3Error } from "../http/errors.ts";
import { corsXml, parseCorsConfiguration } from "./xml.ts";

function config(rules: string, root = "CORSConfiguration"): string {
  return `<?xml version="1.0" encoding="UTF-8"?><${root} xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${rules}</${root}>`;
}

const BASIC = "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>" +
  "</CORSRule>";

function errorOf(body: string): { code: string; message: string } {
  try {
    parseCorsConfiguration(body);
  } catch (err) {
    if (err instanceof S3Error) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error("expected an error");
}

Deno.test("parse: a full rule, in either root spelling, and back", () => {
  const rule = "<CORSRule><ID>web</ID><AllowedOrigin>https://*.example.com</AllowedOrigin>" +
    "<AllowedOrigin>http://localhost:8080</AllowedOrigin><AllowedMethod>PUT</AllowedMethod>" +
    "<AllowedMethod>GET</AllowedMethod><AllowedHeader>Content-Type</AllowedHeader>" +
    "<AllowedHeader>x-amz-*</AllowedHeader><ExposeHeader>ETag</ExposeHeader>" +
    "<MaxAgeSeconds>3000</MaxAgeSeconds></CORSRule>";
  for (const root of ["CORSConfiguration", "CorsConfiguration"]) {
    const rules = parseCorsConfiguration(config(rule + BASIC, root));
    assertEquals(rules, [
      {
        id: "web",
        allowedOrigins: ["https://*.example.com", "http://localhost:8080"],
        allowedMethods: ["PUT", "GET"],
        allowedHeaders: ["content-type", "x-amz-*"],
        exposeHeaders: ["ETag"],
        maxAgeSeconds: 3000,
      },
      { allowedOrigins: ["*"], allowedMethods: ["GET"], allowedHeaders: [], exposeHeaders: [] },
    ]);
    const xml = corsXml(rules, "http://store.local/doc/2006-03-01/");
    assertEquals(parseCorsConfiguration(xml), rules);
    assertMatch(xml, /^<\?xml[^>]*>\n<CORSConfiguration xmlns="http:\/\/store\.local/);
    assertMatch(xml, /<CORSRule><ID>web<\/ID><AllowedHeader>content-type<\/AllowedHeader>/);
  }
});

Deno.test("parse: shape errors are MalformedXML", () => {
  const cases = [
    "not xml",
    config(""),
    "<Other>" + BASIC + "</Other>",
    config("<CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>"),
    config("<CORSRule><AllowedOrigin>*</AllowedOrigin></CORSRule>"),
    config("<CORSRule></CORSRule>"),
    config(BASIC.replace("</CORSRule>", "<Extra>1</Extra></CORSRule>")),
    config(BASIC.replace("</CORSRule>", "<MaxAgeSeconds>-1</MaxAgeSeconds></CORSRule>")),
    config(BASIC.replace("</CORSRule>", "<MaxAgeSeconds>soon</MaxAgeSeconds></CORSRule>")),
    config(BASIC.replace("</CORSRule>", "<ID>a</ID><ID>b</ID></CORSRule>")),
    config(BASIC + "<Rule/>"),
    config(BASIC.repeat(101)),
  ];
  for (const body of cases) assertEquals(errorOf(body).code, "MalformedXML", body);
  assertEquals(parseCorsConfiguration(config(BASIC.repeat(100))).length, 100);
});

Deno.test("parse: unsupported values are InvalidRequest", () => {
  const bad = (inner: string) => config(`<CORSRule>${inner}</CORSRule>`);
  let e = errorOf(bad("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>"));
  assertEquals(e.code, "InvalidRequest");
  assertMatch(e.message, /Unsupported method is PATCH/);
  e = errorOf(bad("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>get</AllowedMethod>"));
  assertEquals(e.code, "InvalidRequest", "methods are case-sensitive");
  e = errorOf(
    bad("<AllowedOrigin>https://*.*.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"),
  );
  assertEquals(e.code, "InvalidRequest");
  assertMatch(
    e.message,
    /AllowedOrigin "https:\/\/\*\.\*\.com" can not have more than one wildcard/,
  );
  e = errorOf(
    bad(
      "<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedHeader>**</AllowedHeader>",
    ),
  );
  assertEquals(e.code, "InvalidRequest");
  e = errorOf(
    bad(
      `<ID>${
        "i".repeat(256)
      }</ID><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>`,
    ),
  );
  assertEquals(e.code, "InvalidRequest");
});

Deno.test("render: values are escaped", () => {
  const xml = corsXml([{
    id: "<&>",
    allowedOrigins: ["https://a.com"],
    allowedMethods: ["GET"],
    allowedHeaders: [],
    exposeHeaders: [],
  }], undefined);
  assertMatch(xml, /<ID>&lt;&amp;&gt;<\/ID>/);
});
