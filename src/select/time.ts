// Timestamps of the SQL dialect: parsing the ISO 8601 forms it accepts, formatting with
// TO_STRING patterns, and the date arithmetic of DATE_ADD, DATE_DIFF and EXTRACT.
import { S3Error } from "../http/errors.ts";

/** A point in time that remembers the UTC offset (minutes) it was written with. */
export class Timestamp extends Date {
  constructor(ms: number, readonly offset = 0) {
    super(ms);
  }
  /** The wall-clock fields in the timestamp's own offset, as a UTC Date. */
  local(): Date {
    return new Date(this.getTime() + this.offset * 60_000);
  }
}

const ISO = new RegExp(
  "^(\\d{4})(?:-(\\d{2})(?:-(\\d{2}))?)?" +
    "(?:T(?:(\\d{2}):(\\d{2})(?::(\\d{2})(?:\\.(\\d{1,9}))?)?(Z|[+-]\\d{2}:\\d{2})?)?)?$",
);

/** Parses `2007T`, `2007-02-23T12:14:33.079-08:00` and the forms between; undefined if none. */
export function parseTimestamp(text: string): Timestamp | undefined {
  const m = ISO.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const ms = Date.UTC(
    Number(y),
    Number(mo ?? 1) - 1,
    Number(d ?? 1),
    Number(h ?? 0),
    Number(mi ?? 0),
    Number(s ?? 0),
    frac ? Math.floor(Number(`0.${frac}`) * 1000) : 0,
  );
  let offset = 0;
  if (zone && zone !== "Z") {
    offset = (zone[0] === "-" ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4)));
  }
  const check = new Date(ms);
  if (check.getUTCMonth() !== Number(mo ?? 1) - 1 || check.getUTCDate() !== Number(d ?? 1)) {
    return undefined;
  }
  return new Timestamp(ms - offset * 60_000, offset);
}

function pad(n: number, width: number): string {
  return String(Math.abs(n)).padStart(width, "0");
}

function zoneText(offset: number, colon: boolean, zulu: boolean): string {
  if (offset === 0 && zulu) return "Z";
  const sign = offset < 0 ? "-" : "+";
  const h = pad(Math.trunc(Math.abs(offset) / 60), 2);
  const m = pad(Math.abs(offset) % 60, 2);
  return colon ? `${sign}${h}:${m}` : `${sign}${h}${m}`;
}

/** The canonical text of a timestamp (ISO 8601 in its own offset). */
export function timestampText(t: Date): string {
  const offset = t instanceof Timestamp ? t.offset : 0;
  const l = t instanceof Timestamp ? t.local() : t;
  const ms = l.getUTCMilliseconds();
  return `${pad(l.getUTCFullYear(), 4)}-${pad(l.getUTCMonth() + 1, 2)}-${pad(l.getUTCDate(), 2)}` +
    `T${pad(l.getUTCHours(), 2)}:${pad(l.getUTCMinutes(), 2)}:${pad(l.getUTCSeconds(), 2)}` +
    (ms ? `.${pad(ms, 3)}` : "") + zoneText(offset, true, true);
}

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

/** TO_STRING: the pattern letters y M d a h H m s S n X x, quoted text and punctuation. */
export function formatTimestamp(t: Date, pattern: string): string {
  const offset = t instanceof Timestamp ? t.offset : 0;
  const l = t instanceof Timestamp ? t.local() : t;
  let out = "";
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i];
    if (c === "'") {
      const end = pattern.indexOf("'", i + 1);
      if (end < 0) throw badPattern(pattern);
      out += end === i + 1 ? "'" : pattern.slice(i + 1, end);
      i = end + 1;
      continue;
    }
    if (!/[A-Za-z]/.test(c)) {
      out += c;
      i++;
      continue;
    }
    let n = 1;
    while (pattern[i + n] === c) n++;
    i += n;
    const hours = l.getUTCHours();
    switch (c) {
      case "y":
        out += n === 2 ? pad(l.getUTCFullYear() % 100, 2) : pad(l.getUTCFullYear(), n);
        break;
      case "M": {
        const month = l.getUTCMonth();
        if (n <= 2) out += pad(month + 1, n);
        else if (n === 3) out += MONTHS[month].slice(0, 3);
        else if (n === 4) out += MONTHS[month];
        else out += MONTHS[month][0];
        break;
      }
      case "d":
        out += pad(l.getUTCDate(), n);
        break;
      case "a":
        out += hours < 12 ? "AM" : "PM";
        break;
      case "h":
        out += pad(hours % 12 === 0 ? 12 : hours % 12, n);
        break;
      case "H":
        out += pad(hours, n);
        break;
      case "m":
        out += pad(l.getUTCMinutes(), n);
        break;
      case "s":
        out += pad(l.getUTCSeconds(), n);
        break;
      case "S":
        out += pad(l.getUTCMilliseconds(), 3).padEnd(n, "0").slice(0, n);
        break;
      case "n":
        out += String(l.getUTCMilliseconds() * 1_000_000);
        break;
      case "X":
      case "x": {
        const text = zoneText(offset, n >= 3, c === "X");
        out += n === 1 && text !== "Z" ? text.slice(0, 3) : text;
        break;
      }
      default:
        throw badPattern(pattern);
    }
  }
  return out;
}

function badPattern(pattern: string): S3Error {
  return new S3Error(
    "EvaluatorInvalidTimestampFormatPattern",
    `The timestamp format pattern '${pattern}' is invalid.`,
  );
}

export function extract(part: string, t: Date): number {
  const offset = t instanceof Timestamp ? t.offset : 0;
  const l = t instanceof Timestamp ? t.local() : t;
  switch (part) {
    case "YEAR":
      return l.getUTCFullYear();
    case "MONTH":
      return l.getUTCMonth() + 1;
    case "DAY":
      return l.getUTCDate();
    case "HOUR":
      return l.getUTCHours();
    case "MINUTE":
      return l.getUTCMinutes();
    case "SECOND":
      return l.getUTCSeconds();
    case "TIMEZONE_HOUR":
      return Math.trunc(offset / 60);
    default:
      return offset % 60;
  }
}

const UNIT_MS: Record<string, number> = {
  DAY: 86_400_000,
  HOUR: 3_600_000,
  MINUTE: 60_000,
  SECOND: 1000,
};

export function dateAdd(part: string, amount: number, t: Date): Timestamp {
  const offset = t instanceof Timestamp ? t.offset : 0;
  if (UNIT_MS[part]) return new Timestamp(t.getTime() + amount * UNIT_MS[part], offset);
  const l = t instanceof Timestamp ? t.local() : new Date(t.getTime());
  const months = part === "YEAR" ? amount * 12 : amount;
  const day = l.getUTCDate();
  l.setUTCDate(1);
  l.setUTCMonth(l.getUTCMonth() + months);
  // The day of month is kept, or clamped to the new month's last day.
  const last = new Date(Date.UTC(l.getUTCFullYear(), l.getUTCMonth() + 1, 0)).getUTCDate();
  l.setUTCDate(Math.min(day, last));
  return new Timestamp(l.getTime() - offset * 60_000, offset);
}

/** Whole `part`s from a to b (negative when b is earlier). */
export function dateDiff(part: string, a: Date, b: Date): number {
  if (UNIT_MS[part]) return Math.trunc((b.getTime() - a.getTime()) / UNIT_MS[part]);
  const months = (b.getUTCFullYear() - a.getUTCFullYear()) * 12 + b.getUTCMonth() - a.getUTCMonth();
  // A partial month does not count: compare the rest of the two dates.
  const restA = a.getTime() - Date.UTC(a.getUTCFullYear(), a.getUTCMonth());
  const restB = b.getTime() - Date.UTC(b.getUTCFullYear(), b.getUTCMonth());
  let whole = months;
  if (months > 0 && restB < restA) whole--;
  if (months < 0 && restB > restA) whole++;
  return part === "YEAR" ? Math.trunc(whole / 12) : whole;
}
