// Certificates made for a test with openssl: a CA and server certificates it signed for
// 127.0.0.1 and localhost.
import { join } from "node:path";

export interface TestCa {
  dir: string;
  /** The CA certificate (what clients trust). */
  caFile: string;
  /** Issues a server certificate with this common name: its PEM files. */
  issue(name: string): Promise<{ certFile: string; keyFile: string }>;
}

async function openssl(cwd: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command("openssl", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`openssl ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

const EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

export async function makeTestCa(): Promise<TestCa> {
  const dir = await Deno.makeTempDir({ prefix: "store-tls-" });
  await openssl(
    dir,
    "req",
    "-x509",
    ...EC_KEY,
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "2",
    "-subj",
    "/CN=store test CA",
  );
  await Deno.writeTextFile(
    join(dir, "server.ext"),
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n" +
      "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
  );
  return {
    dir,
    caFile: join(dir, "ca.crt"),
    async issue(name) {
      await openssl(
        dir,
        "req",
        ...EC_KEY,
        "-keyout",
        `${name}.key`,
        "-out",
        `${name}.csr`,
        "-subj",
        `/CN=${name}`,
      );
      await openssl(
        dir,
        "x509",
        "-req",
        "-in",
        `${name}.csr`,
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        `${name}.crt`,
      );
      return { certFile: join(dir, `${name}.crt`), keyFile: join(dir, `${name}.key`) };
    },
  };
}

/** The common name of the certificate a server presents to a new connection. */
export async function presentedName(port: number): Promise<string | undefined> {
  const out = await new Deno.Command("openssl", {
    args: ["s_client", "-connect", `127.0.0.1:${port}`, "-servername", "localhost"],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  return /subject=.*CN\s*=\s*([^\s,/]+)/.exec(new TextDecoder().decode(out.stdout))?.[1];
}
