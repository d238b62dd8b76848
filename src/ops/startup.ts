// Start-up failures an operator can fix, each as one line naming the cause and the setting
// (main.ts prints it and exits with code 2, without a stack trace).
import { join } from "node:path";
import type { Config } from "../config.ts";
import type { TlsKeyPair } from "../net/listener.ts";

/** A start-up failure whose message is the whole explanation. */
export class StartupError extends Error {}

/** What an error from the file system says, in words (`Deno.errors.*` name -> phrase). */
function fsCause(err: unknown): string {
  if (err instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (err instanceof Deno.errors.NotCapable) {
    return "this process may not use it (the deno run --allow-read/--allow-write flags)";
  }
  if (err instanceof Deno.errors.NotADirectory) return "a part of the path is a file";
  if (err instanceof Deno.errors.NotFound) return "it does not exist";
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/,? ?(mkdir|open|stat|remove) '.*'$/, "");
}

async function statOrUndefined(path: string, setting: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw new StartupError(`${setting}: cannot use ${path}: ${fsCause(err)}`);
  }
}

/** Creates a file in `dir` and removes it: whether the server can write there. */
async function probeWrite(dir: string, setting: string): Promise<void> {
  const probe = join(dir, `.write-test-${Deno.pid}`);
  try {
    await Deno.writeFile(probe, new Uint8Array(0));
    await Deno.remove(probe);
  } catch (err) {
    const user = Deno.uid() === null ? "" : ` by user ${Deno.uid()}`;
    throw new StartupError(`${setting}: ${dir} is not writable${user}: ${fsCause(err)}`);
  }
}

/**
 * The metadata directory (created when missing) and every drive directory that exists must be
 * directories this process can write. A missing drive directory is left to the drive set (it
 * may be an unmounted disk, whose shards are rebuilt from the others).
 */
export async function checkDataDirs(config: Config, createDir: (path: string) => Promise<void>) {
  const meta = await statOrUndefined(config.dataDir, "STORE_DATA_DIR");
  if (meta && !meta.isDirectory) {
    throw new StartupError(`STORE_DATA_DIR: ${config.dataDir} exists and is not a directory`);
  }
  if (!meta) {
    try {
      await createDir(config.dataDir);
    } catch (err) {
      throw new StartupError(`STORE_DATA_DIR: cannot create ${config.dataDir}: ${fsCause(err)}`);
    }
  }
  await probeWrite(config.dataDir, "STORE_DATA_DIR");
  for (const drive of config.dataDirs) {
    if (drive === config.dataDir) continue;
    const info = await statOrUndefined(drive, "STORE_DATA_DIRS");
    if (info && !info.isDirectory) {
      throw new StartupError(`STORE_DATA_DIRS: ${drive} exists and is not a directory`);
    }
    if (info) await probeWrite(drive, "STORE_DATA_DIRS");
  }
}

/** Reads the PEM files named by STORE_TLS_CERT and STORE_TLS_KEY. */
export async function readTlsFiles(tls: NonNullable<Config["tls"]>): Promise<TlsKeyPair> {
  const read = async (path: string, setting: string) => {
    try {
      return await Deno.readTextFile(path);
    } catch (err) {
      throw new StartupError(`${setting}: cannot read ${path}: ${fsCause(err)}`);
    }
  };
  return {
    cert: await read(tls.certFile, "STORE_TLS_CERT"),
    key: await read(tls.keyFile, "STORE_TLS_KEY"),
  };
}

/** Why the listening socket could not be opened (undefined when the error is not about that). */
export function explainListenError(err: unknown, config: Config): StartupError | undefined {
  const where = `${config.address}:${config.port}`;
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof Deno.errors.AddrInUse) {
    return new StartupError(
      `STORE_PORT: port ${config.port} on ${config.address} is already in use by another program`,
    );
  }
  if (err instanceof Deno.errors.AddrNotAvailable) {
    return new StartupError(`STORE_ADDRESS: ${config.address} is not an address of this machine`);
  }
  if (err instanceof Deno.errors.PermissionDenied) {
    return new StartupError(
      `STORE_PORT: listening on ${where} was refused: ports below 1024 need root or ` +
        `CAP_NET_BIND_SERVICE`,
    );
  }
  if (err instanceof Deno.errors.NotCapable) {
    return new StartupError(
      `STORE_ADDRESS/STORE_PORT: this process may not listen on ${where} (deno run --allow-net)`,
    );
  }
  if (/lookup address|name or service|nodename nor servname|resolve/i.test(message)) {
    return new StartupError(`STORE_ADDRESS: ${config.address} does not resolve to an address`);
  }
  if (config.tls && /certificate|private key|KeyMismatch|pem|keys may not be/i.test(message)) {
    return new StartupError(
      `STORE_TLS_CERT/STORE_TLS_KEY: ${config.tls.certFile} and ${config.tls.keyFile} are not a ` +
        `usable PEM certificate chain and matching private key (${message})`,
    );
  }
  return undefined;
}
