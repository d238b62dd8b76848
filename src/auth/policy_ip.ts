// IPv4 and IPv6 addresses and CIDR blocks for the SourceIp condition key.

interface Ip {
  v6: boolean;
  value: bigint;
}

function parseV4(text: string): bigint | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let n = 0n;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return undefined;
    n = n * 256n + BigInt(part);
  }
  return n;
}

function parseV6(text: string): bigint | undefined {
  const last = text.lastIndexOf(":");
  const tail = text.slice(last + 1);
  const v4 = tail.includes(".") ? parseV4(tail) : undefined;
  if (tail.includes(".") && v4 === undefined) return undefined;
  const head = v4 === undefined ? text : `${text.slice(0, last + 1)}0:0`;
  const halves = head.split("::");
  if (halves.length > 2) return undefined;
  const groupsOf = (s: string) => (s === "" ? [] : s.split(":"));
  const left = groupsOf(halves[0]);
  const right = halves.length === 2 ? groupsOf(halves[1]) : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  let n = 0n;
  for (const g of [...left, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...right]) {
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return undefined;
    n = (n << 16n) | BigInt(`0x${g}`);
  }
  return v4 === undefined ? n : n | v4;
}

const MAPPED_V4 = 0xffffn << 32n;

/** An IPv4 or IPv6 address; brackets and a zone id are ignored. */
function parseIp(text: string): Ip | undefined {
  let t = text.trim();
  if (t.startsWith("[") && t.endsWith("]")) t = t.slice(1, -1);
  const zone = t.indexOf("%");
  if (zone >= 0) t = t.slice(0, zone);
  if (!t.includes(":")) {
    const v4 = parseV4(t);
    return v4 === undefined ? undefined : { v6: false, value: v4 };
  }
  const v6 = parseV6(t);
  return v6 === undefined ? undefined : { v6: true, value: v6 };
}

/**
 * A CIDR block or a single address (a block of one). Blocks inside the IPv4-mapped range
 * (::ffff:0:0/96) are turned into their IPv4 equivalent.
 */
export function parseCidr(text: string): (Ip & { bits: number }) | undefined {
  const slash = text.indexOf("/");
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!ip) return undefined;
  const width = ip.v6 ? 128 : 32;
  const bitsText = slash < 0 ? String(width) : text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bitsText) || Number(bitsText) > width) return undefined;
  const bits = Number(bitsText);
  if (ip.v6 && bits >= 96 && ip.value >> 32n === 0xffffn) {
    return { v6: false, value: ip.value - MAPPED_V4, bits: bits - 96 };
  }
  return { ...ip, bits };
}

/** True when `address` lies in `cidr`; an IPv4-mapped IPv6 address counts as IPv4. */
export function cidrContains(cidr: string, address: string): boolean {
  const block = parseCidr(cidr);
  const ip = address.includes("/") ? undefined : parseCidr(address);
  if (!block || !ip || block.v6 !== ip.v6) return false;
  const shift = BigInt((block.v6 ? 128 : 32) - block.bits);
  return ip.value >> shift === block.value >> shift;
}
