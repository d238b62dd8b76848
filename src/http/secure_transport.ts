// Whether a request travelled encrypted, and the refusal of SSE-C keys that did not: a customer
// key sent in clear text is exposed to anyone on the path, so the protocol refuses it over HTTP.
import { connectionIsTls } from "../net/connection_context.ts";
import { S3Error } from "./errors.ts";

/**
 * TLS served by this process, or (with STORE_TRUST_PROXY) a proxy in front that says it took the
 * request over HTTPS. Without trust the header is ignored: any client could send it.
 */
export function isSecureRequest(headers: Headers, trustProxy: boolean): boolean {
  if (connectionIsTls()) return true;
  if (!trustProxy) return false;
  const proto = headers.get("x-forwarded-proto")?.split(",")[0].trim().toLowerCase();
  return proto === "https";
}

/** The SSE-C headers of either dialect, for the object and for a copy source. */
const CUSTOMER_KEY_HEADER = /^x-(amz|store)-(copy-source-)?server-side-encryption-customer-/;

/** Throws the protocol's refusal when SSE-C headers arrive over plain HTTP. */
export function refuseInsecureCustomerKeys(headers: Headers, secure: boolean): void {
  if (secure) return;
  // forEach: several times cheaper than the Headers iterator (which sorts on every call).
  let found = false;
  headers.forEach((_value, name) => {
    if (CUSTOMER_KEY_HEADER.test(name)) found = true;
  });
  if (found) {
    throw new S3Error(
      "InvalidRequest",
      "Requests specifying Server Side Encryption with Customer provided keys must be made " +
        "over a secure connection.",
    );
  }
}
