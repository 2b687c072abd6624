import { seededRandom } from "../support/seededRandom";

/**
 * The fuzzer's only source of randomness. Every case draws from its own generator, seeded from the run's seed and
 * the case's number, so one case can be replayed alone (`--seed S --case h123`) without replaying the others, and
 * no case depends on how fast the relay answered the ones before it.
 */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  chance(probability: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** One of the items, in proportion to its weight. */
  weighted<T>(items: readonly (readonly [T, number])[]): T;
  /** `count` bytes. */
  bytes(count: number): Buffer;
}

/** splitmix32's finaliser: spreads a 32-bit value over all 32 bits. */
function mix(value: number): number {
  let z = (value + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** The seed of case `index` of stream `stream` (a small number per case family) in run `seed`. */
export function caseSeed(seed: number, stream: number, index: number): number {
  return mix(mix(mix(seed) ^ stream) ^ index);
}

/** A case's generator: the tests' seeded mulberry32 underneath, so a seed replays the same mutations. */
export function createRandom(seed: number): Random {
  const next = seededRandom(seed);
  const random: Random = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (probability) => next() < probability,
    pick<T>(items: readonly T[]): T {
      if (items.length === 0) throw new Error("pick from an empty list");
      return items[Math.floor(next() * items.length)] as T;
    },
    weighted<T>(items: readonly (readonly [T, number])[]): T {
      const total = items.reduce((sum, [, weight]) => sum + weight, 0);
      let roll = next() * total;
      for (const [item, weight] of items) {
        roll -= weight;
        if (roll < 0) return item;
      }
      return (items[items.length - 1] as readonly [T, number])[0];
    },
    bytes(count) {
      const out = Buffer.alloc(count);
      for (let i = 0; i < count; i++) out[i] = Math.floor(next() * 256);
      return out;
    },
  };
  return random;
}
