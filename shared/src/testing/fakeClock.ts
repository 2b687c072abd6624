import type { Clock } from "../clock";

interface Timer {
  readonly id: number;
  readonly at: number;
  readonly callback: () => void;
}

/**
 * A clock that only moves when told to; timers fire in time order during `advance`. The one fake clock of the
 * repository: the extension's pipeline, the relay's delivery worker, Socket Mode and live hub, and the agent helper
 * are all tested on it.
 */
export class FakeClock implements Clock {
  private time: number;
  private nextId = 1;
  private timers: Timer[] = [];

  constructor(start = 1_700_000_000_000) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(callback: () => void, ms: number): number {
    const timer = { id: this.nextId++, at: this.time + Math.max(0, ms), callback };
    this.timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((timer) => timer.id !== handle);
  }

  /** Timers not yet fired. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /** When the earliest pending timer is due, or undefined when none is. */
  get nextTimerAt(): number | undefined {
    return this.timers.reduce<number | undefined>(
      (earliest, timer) => (earliest === undefined || timer.at < earliest ? timer.at : earliest),
      undefined,
    );
  }

  /**
   * Moves time forward by `ms`, firing due timers in order. Between timers it yields to the event loop so that
   * promise chains woken by one timer (a fetch, a stream read, a database query) run before the next one fires.
   */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await settle();
    for (;;) {
      const due = this.timers.filter((timer) => timer.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((timer) => timer !== due);
      this.time = due.at;
      due.callback();
      await settle();
    }
    this.time = end;
    await settle();
  }
}

/** Lets pending promise callbacks and I/O callbacks run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setTimeout(resolve, 0));
}
