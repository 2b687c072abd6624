import { randomBytes } from "node:crypto";
import type { WallClock } from "../clock";

// Crockford's base32 is in ASCII order, so fixed-width ids compare like the times they encode.
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

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
    const random = randomBytes(4).readUInt32BE(0);
    return `${prefix}_${encode(now, 10)}${encode(sequence, 4)}${encode(random, 6)}`;
  };
}

export type SortableIds = ReturnType<typeof createSortableIds>;
