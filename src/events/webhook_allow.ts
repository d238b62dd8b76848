// STORE_NOTIFY_WEBHOOK_ALLOW: which hosts a bucket's webhook URL may aim at. A webhook URL is user
// input that makes the server send requests, so it must not reach internal services unless the
// operator says so. Names are resolved and every address they resolve to is checked.
//
// Unset: only globally routable addresses (no loopback, private, link-local, CGNAT, multicast or
// unspecified ones). Set: a comma-separated list of host names (`hooks.example.com`,
// `*.example.com`), addresses and CIDR ranges (`10.1.0.0/16`, `fd00::/8`); `*` allows any host.
import { lookup } from "node:dns/promises";

interface Cidr {
  bytes: Uint8Array;
  bits: number;
}

export interface WebhookAllowList {
  /** Undefined when unset: the default (public addresses only). */
  names?: string[];
  cidrs?: Cidr[];
  any?: boolean;
}

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && +p <= 255)) return;
  return new Uint8Array(parts.map(Number));
}

function parseIpv6(text: string): Uint8Array | undefined {
  let t = text.replace(/^\[|\]$/g, "");
  const zone = t.indexOf("%");
  if (zone >= 0) t = t.slice(0, zone);
  if (!/^[0-9a-fA-F:.]+$/.test(t) || !t.includes(":")) return;
  const lastColon = t.lastIndexOf(":");
  if (t.slice(lastColon + 1).includes(".")) {
    const v4 = parseIpv4(t.slice(lastColon + 1));
    if (!v4) return;
    const word = (a: number, b: number) => ((a << 8) | b).toString(16);
    t = `${t.slice(0, lastColon + 1)}${word(v4[0], v4[1])}:${word(v4[2], v4[3])}`;
  }
  const halves = t.split("::");
  if (halves.length > 2) return;
  const words = (s: string) => (s === "" ? [] : s.split(":").map((w) => parseInt(w, 16)));
  const head = words(halves[0]);
  const rest = halves.length === 2 ? words(halves[1]) : [];
  const fill = 8 - head.length - rest.length;
  if (halves.length === 1 ? fill !== 0 : fill < 0) return;
  const all = [...head, ...new Array(fill).fill(0), ...rest];
  if (all.length !== 8 || all.some((w) => isNaN(w) || w < 0 || w > 0xffff)) return;
  const out = new Uint8Array(16);
  all.forEach((w, i) => {
    out[i * 2] = w >> 8;
    out[i * 2 + 1] = w & 0xff;
  });
  return out;
}

/** An address as bytes (4 or 16); IPv4-mapped IPv6 addresses become IPv4. */
export function parseIp(text: string): Uint8Array | undefined {
  const v4 = parseIpv4(text);
  if (v4) return v4;
  const v6 = parseIpv6(text);
  if (v6 && v6.slice(0, 10).every((b) => b === 0) && v6[10] === 0xff && v6[11] === 0xff) {
    return v6.slice(12);
  }
  return v6;
}

function parseCidr(text: string): Cidr | undefined {
  const [addr, bitsText] = text.split("/");
  const bytes = parseIp(addr);
  if (!bytes) return;
  const max = bytes.length * 8;
  const bits = bitsText === undefined ? max : Number(bitsText);
  if (!Number.isInteger(bits) || bits < 0 || bits > max) return;
  return { bytes, bits };
}

function inCidr(ip: Uint8Array, cidr: Cidr): boolean {
  if (ip.length !== cidr.bytes.length) return false;
  for (let bit = 0; bit < cidr.bits; bit += 8) {
    const take = Math.min(8, cidr.bits - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((ip[bit / 8] & mask) !== (cidr.bytes[bit / 8] & mask)) return false;
  }
  return true;
}

const NOT_PUBLIC = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "224.0.0.0/3",
  "::/127",
  "fc00::/7",
  "fe80::/10",
  "ff00::/8",
  "64:ff9b::/96",
  "2001:db8::/32",
].map((c) => parseCidr(c)!); // deno-fmt-ignore

export function parseAllowList(raw: string | undefined): WebhookAllowList {
  if (raw === undefined || raw.trim() === "") return {};
  const list: WebhookAllowList = { names: [], cidrs: [] };
  for (const entry of raw.split(",").map((e) => e.trim().toLowerCase()).filter((e) => e)) {
    if (entry === "*") list.any = true;
    else if (/^[0-9a-f:.]+(\/\d+)?$/.test(entry) && (entry.includes(".") || entry.includes(":"))) {
      const cidr = parseCidr(entry);
      if (!cidr) throw new Error(`STORE_NOTIFY_WEBHOOK_ALLOW: "${entry}" is not an address or range`);
      list.cidrs!.push(cidr);
    } else if (/^(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(entry)) list.names!.push(entry);
    else throw new Error(`STORE_NOTIFY_WEBHOOK_ALLOW: "${entry}" is not a host name or range`);
  }
  return list;
}

function nameAllowed(host: string, names: string[]): boolean {
  return names.some((n) => n.startsWith("*.") ? host.endsWith(n.slice(1)) : host === n);
}

function addressAllowed(ip: Uint8Array, list: WebhookAllowList): boolean {
  if (list.cidrs === undefined) return !NOT_PUBLIC.some((c) => inCidr(ip, c));
  return list.cidrs.some((c) => inCidr(ip, c));
}

/**
 * Why a webhook URL is refused, or undefined when it may be used. The host is resolved and
 * every address it resolves to must be allowed (a name on the list is trusted as it is).
 */
export async function webhookRefusal(
  url: URL,
  list: WebhookAllowList,
): Promise<string | undefined> {
  if (list.any) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (list.names && nameAllowed(host, list.names)) return undefined;
  let addresses: Uint8Array[];
  const literal = parseIp(host);
  if (literal) addresses = [literal];
  else {
    try {
      const found = await lookup(host, { all: true });
      addresses = found.map((a) => parseIp(a.address)).filter((a) => a !== undefined);
    } catch {
      return `the host ${host} cannot be resolved`;
    }
  }
  if (addresses.length === 0) return `the host ${host} cannot be resolved`;
  if (addresses.every((ip) => addressAllowed(ip, list))) return undefined;
  return list.cidrs === undefined
    ? `the host ${host} is not a public address (see STORE_NOTIFY_WEBHOOK_ALLOW)`
    : `the host ${host} is not in STORE_NOTIFY_WEBHOOK_ALLOW`;
}
