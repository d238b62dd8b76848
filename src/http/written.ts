// Who wants to know when the HTTP writer has sent a view of a buffer: the read path lends
// buffers it reuses once every byte cut from them went out (README, Memory). Only the
// connection's writer reports, after the socket took the bytes; a view that any other consumer
// keeps (or copies, or never writes) is simply never reported, and its buffer is never reused.

const watchers = new WeakMap<ArrayBufferLike, (bytes: number) => void>();

/** Calls `onWritten(n)` each time the writer has sent n bytes of a view of `buffer`. */
export function watchWrites(buffer: ArrayBufferLike, onWritten: (bytes: number) => void): void {
  watchers.set(buffer, onWritten);
}

export function unwatchWrites(buffer: ArrayBufferLike): void {
  watchers.delete(buffer);
}

/** Called by the writer once `view` is with the socket. */
export function reportWritten(view: Uint8Array): void {
  watchers.get(view.buffer)?.(view.byteLength);
}
