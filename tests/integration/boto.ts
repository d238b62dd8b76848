// boto3 (Debian's python3-boto3, installed by scripts/install/sigv2.sh) as a test client.
import { ADMIN_PASSWORD, ADMIN_USER, REGION, type TestServer } from "./server.ts";

/**
 * Runs a boto3 script with the server's URL, the admin's credentials and the region as its
 * arguments, in a clean environment; returns its standard output (throws with its errors and the
 * server's last log lines when it fails).
 */
export async function runBoto(server: TestServer, script: string): Promise<string> {
  const out = await new Deno.Command("/usr/bin/python3", {
    args: ["-c", script, server.url, ADMIN_USER, ADMIN_PASSWORD, REGION],
    env: { PATH: "/usr/bin:/bin", HOME: "/nonexistent", AWS_EC2_METADATA_DISABLED: "true" },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `boto3: ${new TextDecoder().decode(out.stderr)}\n${server.logs().slice(-2000)}`,
    );
  }
  return new TextDecoder().decode(out.stdout);
}
