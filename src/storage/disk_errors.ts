// Recognising operating-system storage errors.

/** True for the operating system's "no space left on device". */
export function isDiskFull(err: unknown): boolean {
  return err instanceof Error &&
    ((err as { code?: string }).code === "ENOSPC" || /os error 28\b/.test(err.message));
}
