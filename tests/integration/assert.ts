// Minimal assertions (the standard library's are on JSR, which is not reachable here).

export class AssertionError extends Error {}

export function assert(condition: unknown, message = "Assertion failed"): asserts condition {
  if (!condition) throw new AssertionError(message);
}

/** JSON that also shows Sets, Maps and byte arrays (plain JSON would print them as {}). */
function show(value: unknown): string {
  return JSON.stringify(value, (_key, v) => {
    if (v instanceof Set) return { Set: [...v] };
    if (v instanceof Map) return { Map: [...v] };
    if (v instanceof Uint8Array) return { bytes: Array.from(v) };
    return v;
  });
}

export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  const a = show(actual);
  const e = show(expected);
  if (a !== e) {
    throw new AssertionError(`${message ?? "Values differ"}\n  actual:   ${a}\n  expected: ${e}`);
  }
}

export function assertMatch(actual: string, pattern: RegExp, message?: string): void {
  if (!pattern.test(actual)) {
    throw new AssertionError(`${message ?? "No match"}: ${JSON.stringify(actual)} !~ ${pattern}`);
  }
}

/** Awaits `fn`, expecting it to reject with an error whose `name` (SDK error code) is `code`. */
export async function assertRejectsCode(
  fn: () => Promise<unknown>,
  code: string,
  status?: number,
): Promise<void> {
  try {
    await fn();
  } catch (err) {
    const e = err as {
      name?: string;
      Code?: string;
      code?: string;
      $metadata?: { httpStatusCode?: number };
    };
    // SDK errors carry the code as Code/name; the server's own S3Error as code.
    const got = e.Code ?? (e.name === "Error" ? e.code : undefined) ?? e.name;
    if (got !== code) throw new AssertionError(`Expected error ${code}, got ${got}: ${err}`);
    if (status !== undefined && e.$metadata?.httpStatusCode !== status) {
      throw new AssertionError(`Expected status ${status}, got ${e.$metadata?.httpStatusCode}`);
    }
    return;
  }
  throw new AssertionError(`Expected error ${code}, but the call succeeded`);
}

export function assertBytesEqual(actual: Uint8Array, expected: Uint8Array, message?: string): void {
  if (actual.byteLength !== expected.byteLength) {
    throw new AssertionError(
      `${message ?? "Bytes differ"}: length ${actual.byteLength} != ${expected.byteLength}`,
    );
  }
  for (let i = 0; i < actual.byteLength; i++) {
    if (actual[i] !== expected[i]) {
      throw new AssertionError(`${message ?? "Bytes differ"} at offset ${i}`);
    }
  }
}

/** Awaits `fn`, expecting it to reject with an HTTP status (for bodiless answers such as 304). */
export async function assertRejectsStatus(
  fn: () => Promise<unknown>,
  status: number,
): Promise<void> {
  try {
    await fn();
  } catch (err) {
    const got = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (got !== status) throw new AssertionError(`Expected status ${status}, got ${got}: ${err}`);
    return;
  }
  throw new AssertionError(`Expected status ${status}, but the call succeeded`);
}
