// Verifies a run of shard blocks against their CRC-32s with one CRC call over the whole run:
// the table's block CRCs fold into the run's expected CRC with the CRC combine math
// (crc32Combiner, src/http/crc.ts: four table lookups per block). One native call per 1 MiB ran
// at 7.8 GB/s against 5.5 for 64 calls over 16 KiB blocks (64 MiB of data, out of cache). Only a
// mismatch looks block by block, to name the bad block.
import { crc32, crc32Combiner } from "../http/crc.ts";

/**
 * Checks `data`, which starts at block `first` of a payload cut into `blockSize` blocks whose
 * CRC-32s are `table` (big-endian u32 each); only its last block may be shorter. The message of
 * the first bad block, or undefined when all match.
 */
export function badBlockIn(
  table: DataView,
  first: number,
  data: Uint8Array,
  blockSize: number,
): string | undefined {
  const whole = Math.floor(data.byteLength / blockSize);
  if (whole > 1) {
    const combine = crc32Combiner(blockSize);
    let expected = table.getUint32(4 * first);
    for (let b = 1; b < whole; b++) expected = combine(expected, table.getUint32(4 * (first + b)));
    const end = whole * blockSize;
    if (crc32(data.subarray(0, end)) === expected) {
      return end === data.byteLength
        ? undefined
        : checkEach(table, first + whole, data.subarray(end), blockSize);
    }
  }
  return checkEach(table, first, data, blockSize);
}

function checkEach(table: DataView, first: number, data: Uint8Array, blockSize: number) {
  for (let at = 0, b = first; at < data.byteLength; at += blockSize, b++) {
    if (crc32(data.subarray(at, at + blockSize)) !== table.getUint32(4 * b)) {
      return `checksum mismatch in block ${b}`;
    }
  }
  return undefined;
}
