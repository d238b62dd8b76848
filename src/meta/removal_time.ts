// Which wins between a write and a removal of one version id made on two nodes at about the same
// time (clustering; in practice the `null` version of an unversioned key, written on one node
// and deleted on another): the later of the two by time, the removal when both fall in the same
// millisecond. Every node decides alike whatever order the two arrive in: a replicated removal
// spares a copy written after it, and a replicated write is not taken where its version id was
// removed at or after it was written (the removal's tombstone). Shared by both stores and the
// object layer.

/** Whether a removal at `deletedAt` (none known: undefined) takes a copy written at `lastModified`. */
export function removalWins(deletedAt: number | undefined, lastModified: number): boolean {
  return deletedAt !== undefined && deletedAt >= lastModified;
}
