// Reed-Solomon erasure coding over GF(2^8) for the chunk store.
export {
  join,
  MAX_DATA_SHARDS,
  MAX_PARITY_SHARDS,
  MAX_TOTAL_SHARDS,
  ReedSolomon,
  type ReedSolomonOptions,
  split,
} from "./reed_solomon.ts";
