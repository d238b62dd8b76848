// Query parameters of the record endpoints (audit, errors): integers and times, 400 when bad.
import { ApiError } from "../api/json.ts";

export function intParam(
  p: URLSearchParams,
  name: string,
  min: number,
  max: number,
): number | undefined {
  const raw = p.get(name);
  if (raw === null) return undefined;
  if (!/^\d{1,16}$/.test(raw) || +raw < min || +raw > max) {
    throw new ApiError(400, "invalid_field", `${name} must be an integer from ${min} to ${max}.`);
  }
  return Number(raw);
}

/** An ISO 8601 time or epoch milliseconds. */
export function timeParam(p: URLSearchParams, name: string): number | undefined {
  const raw = p.get(name);
  if (raw === null) return undefined;
  const at = /^\d{1,16}$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isFinite(at)) {
    throw new ApiError(400, "invalid_field", `${name} must be an ISO 8601 time or epoch ms.`);
  }
  return at;
}
