// Sealing secret keys at rest. SigV4 needs the plain secret to verify a signature, so it cannot
// be hashed; it is encrypted (AES-256-GCM) with a key derived from the master key, which lives
// outside the metadata database. A stolen database alone reveals no secret.
import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv } from "node:crypto";
import type { MasterKey } from "./master_key.ts";

const VERSION = "v1";

export class SecretSealer {
  readonly #key: Uint8Array;

  constructor(master: MasterKey) {
    this.#key = master.derive("credential-secrets");
  }

  seal(secret: string, context: string): string {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    cipher.setAAD(new TextEncoder().encode(context));
    const body = Buffer.concat([
      cipher.update(secret, "utf8"),
      cipher.final(),
      cipher.getAuthTag(),
    ]);
    return `${VERSION}:${Buffer.from(iv).toString("base64")}:${body.toString("base64")}`;
  }

  /** The plain secret; throws when the sealed value was tampered with or moved to another user. */
  open(sealed: string, context: string): string {
    const [version, ivText, bodyText] = sealed.split(":");
    if (version !== VERSION || !ivText || !bodyText) {
      throw new Error("Unknown sealed secret format");
    }
    const body = Buffer.from(bodyText, "base64");
    const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(ivText, "base64"));
    decipher.setAAD(new TextEncoder().encode(context));
    decipher.setAuthTag(body.subarray(body.length - 16));
    return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()])
      .toString("utf8");
  }
}
