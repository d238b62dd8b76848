// Command-line options of the benchmark (scripts/bench.ts).
import type { Endpoint } from "./bench_client.ts";
import type { MemoryProbe } from "./bench_run.ts";

export const KiB = 1024;
export const MiB = 1024 * KiB;
/** Sizes from here on use --count-large and, by default, also run MPU and GETRANGE. */
export const LARGE = 16 * MiB;
/** S3's bounds on a part (the last part may be smaller) and on the number of parts. */
const MIN_PART = 5 * MiB;
const MAX_PART = 5 * 1024 * MiB;
const MAX_PARTS = 10_000;

export const OPS = ["put", "mpu", "get", "getrange", "head", "list", "delete"] as const;
export type Op = typeof OPS[number];
/** Run by default only at sizes of LARGE and more; at any size when --ops names them. */
const LARGE_ONLY: readonly Op[] = ["mpu", "getrange"];

export const HELP = `Usage: deno task bench [options]
  --url URL            server to test (env BENCH_URL); omitted: start one on a temp dir
  --access-key KEY     (env BENCH_ACCESS_KEY)
  --secret-key SECRET  (env BENCH_SECRET_KEY)
  --region REGION      (env BENCH_REGION, default us-east-1)
  --concurrency N      requests in flight (default 8)
  --sizes LIST         object sizes, e.g. 4k,1m,64m (default), 256m or 1g
  --ops LIST           any of put,mpu,get,getrange,head,list,delete (default all; mpu and
                       getrange only at sizes of 16 MiB and more unless named here)
  --part-size SIZE     multipart part size and ranged GET length (default 8m, at least 5m)
  --count N            operations per op for sizes under 16 MiB, and HEAD and LIST at every
                       size (default 2000 up to 64 KiB and for HEAD and LIST, 200 above);
                       LIST runs a tenth as many (at least 10)
  --count-large N      operations per op for sizes of 16 MiB and more (default 16)
  --duration S         also stop each op after S seconds
  --warmup N           unmeasured 4 KiB requests (PUT, GET, HEAD, DELETE) each server gets
                       before the first load (default 5000, 0: none): a JIT-compiled server
                       runs its first thousand requests markedly slower
  --bucket NAME        bucket to create and use (default bench-<random>)
  --keep               leave the objects and the bucket in place
  --data KIND          what the bodies hold: random (default; stored as they are) or text
                       (letters, about 2:1 under zstd: stored compressed)
  --server-env FILE    environment of the server started here, KEY=value lines (e.g.
                       scripts/small-box.env); DENO_V8_FLAGS there reaches its V8
  --compare URL        also run every load against this other server, alternating with ours
                       size by size, and print both with their ratios (env BENCH_COMPARE_URL)
  --compare-access-key KEY, --compare-secret-key SECRET
                       its credentials (env BENCH_COMPARE_ACCESS_KEY, BENCH_COMPARE_SECRET_KEY)
  --compare-pid PID    its process, to report its RSS per load as for ours
  --rounds N           with --compare: alternate the two servers N times (default 1)
  --postgres           the server started here keeps its metadata in a PostgreSQL started
                       for the run (initdb in a temp dir, fsync on; tests/services/postgres.ts)
MPU is one whole multipart upload per operation (create, parts, complete); its parts share
the --concurrency budget, so it uploads as many objects at once as keeps about that many
parts in flight (at least one). GETRANGE reads --part-size at random offsets and runs as many
ranges as there are parts in the objects GET reads.
MB/s counts 1 MB = 1,000,000 bytes of object data (PUT, MPU, GET and GETRANGE only).`;

const FLAGS = [
  "url",
  "access-key",
  "secret-key",
  "region",
  "concurrency",
  "sizes",
  "ops",
  "part-size",
  "count",
  "count-large",
  "duration",
  "warmup",
  "bucket",
  "keep",
  "server-env",
  "compare",
  "compare-access-key",
  "compare-secret-key",
  "compare-pid",
  "rounds",
  "postgres",
  "data",
];

export interface Options {
  endpoint?: Endpoint;
  region: string;
  concurrency: number;
  sizes: number[];
  ops: Op[];
  /** Whether --ops was given (then LARGE_ONLY ops run at every size). */
  opsNamed: boolean;
  partSize: number;
  count?: number;
  countLarge: number;
  duration?: number;
  /** Unmeasured requests per server before the first load (--warmup). */
  warmup: number;
  bucket: string;
  keep: boolean;
  /** Environment of the server the benchmark starts (--server-env). */
  serverEnv: Record<string, string>;
  /** Metadata in a PostgreSQL the benchmark starts (--postgres). */
  postgres: boolean;
  /** Measures the server's memory per load (set when the benchmark started the server). */
  memory?: MemoryProbe;
  /** Another server run through the same loads (--compare), and its process if known. */
  compare?: { endpoint: Endpoint; pid?: number };
  rounds: number;
  /** What the bodies hold (--data): random bytes, or text-like bytes (~2:1 under zstd). */
  data: "random" | "text";
}

export function parseSize(text: string): number {
  const m = /^(\d+)\s*(b|k|kib|kb|m|mib|mb|g|gib|gb)?$/i.exec(text.trim());
  if (!m) throw new Error(`Not a size: "${text}"`);
  const unit = (m[2] ?? "b").toLowerCase()[0];
  return Number(m[1]) * ({ b: 1, k: KiB, m: MiB, g: 1024 * MiB } as Record<string, number>)[unit];
}

export function sizeLabel(size: number): string {
  if (size >= 1024 * MiB && size % (1024 * MiB) === 0) return `${size / (1024 * MiB)} GiB`;
  if (size >= MiB && size % MiB === 0) return `${size / MiB} MiB`;
  if (size >= KiB && size % KiB === 0) return `${size / KiB} KiB`;
  return `${size} B`;
}

function positive(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} needs a positive number`);
  return n;
}

function readFlags(args: string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--help" || arg === "-h") {
      console.log(HELP);
      Deno.exit(0);
    }
    if (!arg.startsWith("--")) throw new Error(`Unexpected argument "${arg}"`);
    const eq = arg.indexOf("=");
    if (eq > 0) flags.set(arg.slice(2, eq), arg.slice(eq + 1));
    else if (arg === "--keep") flags.set("keep", "true");
    else if (arg === "--postgres") flags.set("postgres", "true");
    else flags.set(arg.slice(2), args[++i] ?? "");
  }
  for (const name of flags.keys()) {
    if (!FLAGS.includes(name)) throw new Error(`Unknown option --${name}\n\n${HELP}`);
  }
  return flags;
}

/** The endpoint of --url (prefix "") or --compare (prefix "compare"), with its credentials. */
export function readEndpoint(
  flags: Map<string, string>,
  region: string,
  prefix: "" | "compare",
): Endpoint | undefined {
  const flag = (name: string) => flags.get(prefix ? `${prefix}-${name}` : name);
  const env = (name: string) =>
    Deno.env.get(`BENCH_${prefix ? `${prefix.toUpperCase()}_` : ""}${name}`);
  const url = flags.get(prefix || "url") ?? env("URL");
  if (!url) return undefined;
  const accessKey = flag("access-key") ?? env("ACCESS_KEY");
  const secretKey = flag("secret-key") ?? env("SECRET_KEY");
  if (!accessKey || !secretKey) throw new Error(`${url} needs an access key and a secret key`);
  return { url: url.replace(/\/+$/, ""), accessKey, secretKey, region };
}

function readCompare(flags: Map<string, string>, region: string): Options["compare"] {
  const endpoint = readEndpoint(flags, region, "compare");
  if (!endpoint) return undefined;
  const pid = flags.get("compare-pid");
  return { endpoint, pid: pid === undefined ? undefined : positive("--compare-pid", pid) };
}

function readSizes(flags: Map<string, string>): { sizes: number[]; partSize: number } {
  const sizes = (flags.get("sizes") ?? "4k,1m,64m").split(",").map(parseSize);
  const partSize = parseSize(flags.get("part-size") ?? "8m");
  if (partSize < MIN_PART || partSize > MAX_PART) {
    throw new Error("--part-size must be between 5 MiB and 5 GiB");
  }
  const tooMany = sizes.find((size) => Math.ceil(size / partSize) > MAX_PARTS);
  if (tooMany !== undefined) {
    throw new Error(`${sizeLabel(tooMany)} needs more than ${MAX_PARTS} parts; raise --part-size`);
  }
  return { sizes, partSize };
}

export function parseArgs(args: string[]): Options {
  const flags = readFlags(args);
  const region = flags.get("region") ?? Deno.env.get("BENCH_REGION") ?? "us-east-1";
  const ops = (flags.get("ops") ?? OPS.join(",")).split(",").map((s) => s.trim().toLowerCase());
  for (const op of ops) {
    if (!(OPS as readonly string[]).includes(op)) throw new Error(`Unknown operation "${op}"`);
  }
  return {
    endpoint: readEndpoint(flags, region, ""),
    compare: readCompare(flags, region),
    rounds: Math.floor(positive("--rounds", flags.get("rounds") ?? "1")),
    region,
    concurrency: Math.floor(positive("--concurrency", flags.get("concurrency") ?? "8")),
    ...readSizes(flags),
    ops: OPS.filter((op) => ops.includes(op)),
    opsNamed: flags.has("ops"),
    count: flags.has("count") ? Math.floor(positive("--count", flags.get("count"))) : undefined,
    countLarge: Math.floor(positive("--count-large", flags.get("count-large") ?? "16")),
    duration: flags.has("duration") ? positive("--duration", flags.get("duration")) : undefined,
    warmup: flags.get("warmup") === "0"
      ? 0
      : Math.floor(positive("--warmup", flags.get("warmup") ?? "5000")),
    bucket: flags.get("bucket") ?? `bench-${crypto.randomUUID().slice(0, 8)}`,
    keep: flags.has("keep"),
    serverEnv: flags.has("server-env") ? readEnvFile(flags.get("server-env")!) : {},
    postgres: flags.has("postgres"),
    data: readData(flags.get("data") ?? "random"),
  };
}

function readData(value: string): Options["data"] {
  if (value !== "random" && value !== "text") throw new Error('--data must be "random" or "text"');
  return value;
}

/** KEY=value lines of a file like scripts/store.env (comments and blank lines skipped). */
export function readEnvFile(path: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of Deno.readTextFileSync(path).split("\n")) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2].trim();
  }
  return env;
}

/** Whether `op` is measured at `size`. */
export function selected(opts: Options, op: Op, size: number): boolean {
  if (!opts.ops.includes(op)) return false;
  return opts.opsNamed || !LARGE_ONLY.includes(op) || size >= LARGE;
}

/** Bytes per part or range: --part-size, or the whole object when it is smaller. */
export function partLength(opts: Options, size: number): number {
  return Math.max(1, Math.min(opts.partSize, size));
}

export function countFor(opts: Options, size: number, op: Op): number {
  // HEAD and LIST move no object data: as many at every size (HEAD cycles over the objects).
  const metadataOnly = op === "head" || op === "list";
  let n = size >= LARGE && !metadataOnly
    ? opts.countLarge
    : opts.count ?? (size <= 64 * KiB || metadataOnly ? 2000 : 200);
  if (op === "list") n = Math.max(10, Math.ceil(n / 10));
  if (op === "getrange") n *= Math.ceil(size / partLength(opts, size));
  return n;
}
