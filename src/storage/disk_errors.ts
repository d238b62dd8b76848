// Recognising operating-system storage errors.

/**
 * True for the operating system's "no space left on device", and for SQLite's SQLITE_FULL
 * ("database or disk is full"), which also hides behind a failed rollback ("cannot rollback")
 * when the journal could not be written.
 */
export function isDiskFull(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const { code, errcode } = err as { code?: string; errcode?: number };
  return code === "ENOSPC" || /os error 28\b/.test(err.message) ||
    (errcode !== undefined && (errcode & 0xff) === 13) ||
    /database or disk is full|SQLITE_FULL|cannot rollback/i.test(err.message) ||
    (err.cause !== undefined && isDiskFull(err.cause));
}
