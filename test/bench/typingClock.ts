/**
 * The typing benchmark's clock: fast like a fake clock, honest about the network like a real one.
 *
 * Virtual time is real time plus the idle stretches that were skipped. When no request is in flight, nothing can
 * happen before the next timer (a debounce running out) or the typist's next keystroke, so the clock jumps there.
 * While a request is in flight, the clock does not jump: it runs with `performance.now()` and the replay waits in
 * real time, so a relay answering in 4 ms costs the typist 4 ms, and a keystroke due before the answer arrives
 * really does abort the real HTTP request. A 3-minute typing session thus replays in seconds, and every latency it
 * reports was measured on the wire.
 */
import { performance } from "node:perf_hooks";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Clock } from "../../extension/src/core/types";

interface Timer {
  readonly id: number;
  readonly at: number;
  readonly callback: () => void;
}

export class ReplayClock implements Clock {
  private skippedMs = 0;
  private nextId = 1;
  private timers: Timer[] = [];
  private inFlight = 0;
  private wake: (() => void) | undefined;
  private readonly origin: number;

  /** `start` is the epoch time the replay starts at; the relay sees the same time, so its rate limits apply. */
  constructor(start: number) {
    this.origin = start - performance.now();
  }

  now(): number {
    return this.origin + performance.now() + this.skippedMs;
  }

  /** How much idle time was skipped so far. */
  get skipped(): number {
    return this.skippedMs;
  }

  setTimeout(callback: () => void, ms: number): number {
    const timer = { id: this.nextId++, at: this.now() + Math.max(0, ms), callback };
    this.timers.push(timer);
    // A timer set while waiting for I/O may be due before the wait's deadline.
    this.wake?.();
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((timer) => timer.id !== handle);
  }

  /** Real I/O started: time may no longer be skipped until it ends. */
  beginIo(): void {
    this.inFlight++;
  }

  endIo(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.wake?.();
  }

  get busy(): boolean {
    return this.inFlight > 0;
  }

  /**
   * Runs the world up to `target`: fires due timers in time order, lets promise chains and I/O callbacks run
   * after each, skips idle time and waits out busy time for real. Returns once `now() >= target`.
   */
  async runUntil(target: number): Promise<void> {
    for (;;) {
      await settle();
      const due = this.nextTimer();
      const until = due !== undefined && due.at < target ? due.at : target;
      if (this.now() >= until) {
        if (due === undefined || due.at > target) return;
        this.timers = this.timers.filter((timer) => timer !== due);
        due.callback();
        continue;
      }
      if (this.busy) await this.waitReal(until - this.now());
      else this.skippedMs += until - this.now();
    }
  }

  private nextTimer(): Timer | undefined {
    let best: Timer | undefined;
    for (const timer of this.timers)
      if (best === undefined || timer.at < best.at || (timer.at === best.at && timer.id < best.id)) best = timer;
    return best;
  }

  /** Sleeps for real until `ms` passed, the I/O ended or a timer was set, whichever comes first. */
  private waitReal(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(handle);
        this.wake = undefined;
        resolve();
      };
      const handle = setTimeout(done, Math.max(0, Math.ceil(ms)));
      this.wake = done;
    });
  }
}

/** Lets queued promise callbacks, and I/O callbacks already due, run before time moves on. */
async function settle(): Promise<void> {
  await nextTurn();
  await nextTurn();
}
