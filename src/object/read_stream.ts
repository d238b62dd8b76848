// The read path: the chunks overlapping a byte range, decoded one after another (the next one
// is fetched while the current one streams out), sliced to the range.
import type { VersionChunk } from "../meta/store.ts";
import type { ChunkStore } from "../storage/chunk_store.ts";

/**
 * The stream of a range. The first chunk is read before the stream is returned, so a chunk that
 * cannot be read (lost shards, failed authentication) becomes an error response, not a cut body.
 */
export async function chunkStream(
  store: ChunkStore,
  chunks: VersionChunk[],
  opts: { offset: number; length: number; key?: CryptoKey },
): Promise<ReadableStream<Uint8Array>> {
  const end = opts.offset + opts.length;
  let index = 0;
  const fetchAt = (i: number) => {
    const p = store.read(chunks[i].chunk, { key: opts.key });
    p.catch(() => {});
    return p;
  };
  let next: Promise<Uint8Array> | undefined = chunks.length > 0 ? fetchAt(0) : undefined;
  if (next) await next;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!next) {
        controller.close();
        return;
      }
      const current = chunks[index];
      const plain = await next;
      index++;
      next = index < chunks.length ? fetchAt(index) : undefined;
      const from = Math.max(0, opts.offset - current.offset);
      const to = Math.min(current.size, end - current.offset);
      controller.enqueue(from === 0 && to === plain.byteLength ? plain : plain.subarray(from, to));
    },
  });
}
