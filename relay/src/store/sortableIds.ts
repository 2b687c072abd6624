import { randomBytes } from "node:crypto";
import type { WallClock } from "../clock";

// Crockford's base32 is in ASCII order, so fixed-width ids compare like the times they encode.
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/**
 * Random bytes drawn POOL_BYTES at a time: one `randomBytes` per 256 ids instead of one each, which was 2.7 % of the
 * relay's time on the post → webhook path (three ids per event; docs/benchmarks.md, issue 23). Node batches
 * `randomUUID` the same way (`kBatchSize` in Node 20's lib/internal/crypto/random.js). Each id still gets 4 bytes no
 * other id got.
 */
const POOL_BYTES = 1024;
let pool = Buffer.alloc(0);
let poolOffset = 0;

function randomUint32(): number {
  if (poolOffset + 4 > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolOffset = 0;
  }
  const value = pool.readUInt32BE(poolOffset);
  poolOffset += 4;
  return value;
}

function encode(value: number, width: number): string {
  let out = "";
  for (let i = 0; i < width; i++) {
    out = (ALPHABET[value % 32] as string) + out;
    value = Math.floor(value / 32);
  }
  return out;
}

/**
 * Ids that sort by creation time: `prefix_` + 10 characters of milliseconds + a 4-character sequence within
 * the millisecond + 6 random characters. Messages list newest first and page with `before` by comparing ids,
 * which needs no counter column and stays portable. Never goes backwards in one process, even if the clock does.
 */
export function createSortableIds(clock: WallClock): (prefix: string) => string {
  let lastMs = 0;
  let sequence = 0;
  return (prefix) => {
    const now = Math.max(clock.now(), lastMs);
    sequence = now === lastMs ? sequence + 1 : 0;
    lastMs = now;
    const random = randomUint32();
    return `${prefix}_${encode(now, 10)}${encode(sequence, 4)}${encode(random, 6)}`;
  };
}

export type SortableIds = ReturnType<typeof createSortableIds>;
