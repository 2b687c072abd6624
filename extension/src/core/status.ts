import type { RequestOutcome } from "./request";
import type { Clock } from "./types";

export type StatusKind =
  | "ready"
  | "requesting"
  | "disabled"
  | "snoozed"
  | "notConfigured"
  | "unauthorized"
  | "forbidden"
  | "wrongWorkspace"
  | "rateLimited"
  | "unreachable"
  | "timingOut";

/** A condition reported by the relay (or its absence) that stops or slows requests until it clears. */
export type Problem =
  | { readonly kind: "unauthorized"; readonly message: string }
  | { readonly kind: "forbidden"; readonly message: string }
  /** The key is valid but belongs to `keyWorkspace`, not to the configured `tabRelay.workspaceSlug`. */
  | {
      readonly kind: "wrongWorkspace";
      readonly keyWorkspace: { readonly slug: string; readonly name: string };
      readonly configured: string;
      readonly message: string;
    }
  | { readonly kind: "rateLimited"; readonly until: number; readonly message: string }
  | { readonly kind: "unreachable"; readonly retryAt: number; readonly message: string };

export interface StatusModel {
  readonly enabled: boolean;
  /** Settings (or the API key) still needed before requests can be made. */
  readonly missing: readonly string[];
  readonly snoozedUntil: number | undefined;
  readonly problem: Problem | undefined;
  /** Consecutive 429s and connection failures, for backoff when the relay gives no Retry-After. */
  readonly failureStreak: number;
  /** Requests in a row that got no answer in time; cleared by the next answer. */
  readonly timeoutStreak: number;
  readonly inFlight: number;
  /** When the requests now in flight began (the first of them), or undefined with none in flight. */
  readonly inFlightSince: number | undefined;
}

/**
 * How long requests must have been in flight before the status bar says so. A pause's requests are answered in tens
 * of milliseconds by a relay nearby, and a spinner for each would flicker on every pause (and, in the editor, cost a
 * status bar update twice a pause while the answer is being drawn). Feedback is needed for a wait of a second or
 * more, not below it (Nielsen, "Response Times: The 3 Important Limits", nngroup.com: "normally, no special feedback
 * is necessary during delays of more than 0.1 but less than 1.0 second").
 */
export const REQUESTING_SHOWN_AFTER_MS = 1_000;

export type StatusEvent =
  | { readonly type: "configured"; readonly enabled: boolean; readonly missing: readonly string[] }
  | { readonly type: "credentialsChanged" }
  | { readonly type: "snoozed"; readonly until: number }
  | { readonly type: "resumed" }
  | { readonly type: "retry" }
  | { readonly type: "requestStarted" }
  | {
      readonly type: "requestEnded";
      readonly outcome: RequestOutcome;
      /** For a 401: the workspace `GET /me` says the key belongs to, when the key itself is valid. */
      readonly keyWorkspace?: { readonly slug: string; readonly name: string; readonly configured: string } | undefined;
    }
  /** The answer of a probe of an unreachable relay (`reachable`: it answered at all). */
  | { readonly type: "probed"; readonly reachable: boolean; readonly message: string }
  | { readonly type: "tick" };

const MAX_RETRY_AFTER_MS = 60 * 60_000;
const RATE_LIMIT_BACKOFF = { baseMs: 1_000, maxMs: 60_000 };
const UNREACHABLE_BACKOFF = { baseMs: 1_000, maxMs: 30_000 };
/** Two requests in a row without an answer in time is a relay that hangs, not bad luck: the status says so. */
export const TIMEOUTS_FOR_STATE = 2;

export function initialStatus(enabled: boolean, missing: readonly string[]): StatusModel {
  return {
    enabled,
    missing,
    snoozedUntil: undefined,
    problem: undefined,
    failureStreak: 0,
    timeoutStreak: 0,
    inFlight: 0,
    inFlightSince: undefined,
  };
}

/** Doubling delay per consecutive failure, capped. */
export function backoffMs(streak: number, policy: { baseMs: number; maxMs: number }): number {
  return Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(streak, 20));
}

/** The status model's transitions; pure, with time passed in. */
export function reduceStatus(model: StatusModel, event: StatusEvent, now: number): StatusModel {
  switch (event.type) {
    case "configured":
      return { ...model, enabled: event.enabled, missing: event.missing };
    case "credentialsChanged":
    case "retry":
      return { ...model, problem: undefined, failureStreak: 0, timeoutStreak: 0 };
    case "snoozed":
      return { ...model, snoozedUntil: event.until };
    case "resumed":
      return { ...model, snoozedUntil: undefined };
    case "requestStarted":
      return { ...model, inFlight: model.inFlight + 1, inFlightSince: model.inFlightSince ?? now };
    case "requestEnded": {
      const inFlight = Math.max(0, model.inFlight - 1);
      return afterRequest(
        { ...model, inFlight, inFlightSince: inFlight > 0 ? model.inFlightSince : undefined },
        event,
        now,
      );
    }
    case "probed":
      if (model.problem?.kind !== "unreachable") return model;
      if (event.reachable) return { ...model, problem: undefined, failureStreak: 0 };
      return unreachableAgain(model, event.message, now);
    case "tick":
      return expire(model, now);
  }
}

function unreachableAgain(model: StatusModel, message: string, now: number): StatusModel {
  const retryAt = now + backoffMs(model.failureStreak, UNREACHABLE_BACKOFF);
  return { ...model, problem: { kind: "unreachable", retryAt, message }, failureStreak: model.failureStreak + 1 };
}

function afterRequest(
  model: StatusModel,
  { outcome, keyWorkspace }: Extract<StatusEvent, { type: "requestEnded" }>,
  now: number,
): StatusModel {
  switch (outcome.kind) {
    case "ok":
      return { ...model, problem: undefined, failureStreak: 0, timeoutStreak: 0 };
    case "aborted":
      return model;
    case "timeout":
      return { ...model, timeoutStreak: model.timeoutStreak + 1 };
    case "unreachable":
      return unreachableAgain(model, outcome.message, now);
    case "failed":
      if (outcome.status === 401 && keyWorkspace !== undefined) {
        const { configured, ...workspace } = keyWorkspace;
        return {
          ...model,
          problem: { kind: "wrongWorkspace", keyWorkspace: workspace, configured, message: outcome.message },
        };
      }
      if (outcome.status === 401) return { ...model, problem: { kind: "unauthorized", message: outcome.message } };
      if (outcome.status === 403) return { ...model, problem: { kind: "forbidden", message: outcome.message } };
      if (outcome.status === 429) {
        const wait = outcome.retryAfterMs ?? backoffMs(model.failureStreak, RATE_LIMIT_BACKOFF);
        const until = now + Math.min(wait, MAX_RETRY_AFTER_MS);
        return {
          ...model,
          problem: { kind: "rateLimited", until, message: outcome.message },
          failureStreak: model.failureStreak + 1,
        };
      }
      // Other failures (a bad gateway, a malformed stream) are logged but do not stop the next request.
      return model;
  }
}

/** Ends a snooze or a rate-limit wait whose time has come. */
function expire(model: StatusModel, now: number): StatusModel {
  let next = model;
  if (next.snoozedUntil !== undefined && next.snoozedUntil <= now) next = { ...next, snoozedUntil: undefined };
  if (next.problem?.kind === "rateLimited" && next.problem.until <= now) next = { ...next, problem: undefined };
  return next;
}

/** What the status bar shows; the user's own switches first, then what blocks requests, then activity. */
export function deriveStatus(model: StatusModel, now: number): StatusKind {
  if (!model.enabled) return "disabled";
  if (model.snoozedUntil !== undefined && model.snoozedUntil > now) return "snoozed";
  if (model.missing.length > 0) return "notConfigured";
  const problem = model.problem;
  if (problem?.kind === "unauthorized" || problem?.kind === "forbidden" || problem?.kind === "wrongWorkspace")
    return problem.kind;
  if (problem?.kind === "rateLimited" && problem.until > now) return "rateLimited";
  if (problem?.kind === "unreachable") return "unreachable";
  if (requestingShownAt(model) <= now) return "requesting";
  return model.timeoutStreak >= TIMEOUTS_FOR_STATE ? "timingOut" : "ready";
}

/** When the requests in flight are to show as "requesting"; never (Infinity) with none in flight. */
function requestingShownAt(model: StatusModel): number {
  return model.inFlight > 0 && model.inFlightSince !== undefined
    ? model.inFlightSince + REQUESTING_SHOWN_AFTER_MS
    : Number.POSITIVE_INFINITY;
}

export interface Gate {
  /** The user switched completions off: show nothing, not even cached suggestions. */
  readonly pause: "disabled" | "snoozed" | undefined;
  /** Why no request may be sent now (cached suggestions may still be shown). */
  readonly blocked: StatusKind | undefined;
}

export function gateOf(model: StatusModel, now: number): Gate {
  const kind = deriveStatus(model, now);
  if (kind === "disabled" || kind === "snoozed") return { pause: kind, blocked: kind };
  if (
    kind === "notConfigured" ||
    kind === "unauthorized" ||
    kind === "forbidden" ||
    kind === "wrongWorkspace" ||
    kind === "rateLimited"
  ) {
    return { pause: undefined, blocked: kind };
  }
  if (model.problem?.kind === "unreachable" && model.problem.retryAt > now)
    return { pause: undefined, blocked: "unreachable" };
  return { pause: undefined, blocked: undefined };
}

/** Problems worth interrupting the user for, once each time they start; a rate limit only shows in the status bar. */
export type NoticeKind = "unauthorized" | "forbidden" | "wrongWorkspace" | "unreachable";

function isNoticeKind(kind: Problem["kind"]): kind is NoticeKind {
  return kind !== "rateLimited";
}

export interface Notice {
  readonly kind: NoticeKind;
  readonly message: string;
  /** For `wrongWorkspace`: the workspace the key belongs to. */
  readonly keyWorkspace?: { readonly slug: string; readonly name: string } | undefined;
  /** For `wrongWorkspace`: the `tabRelay.workspaceSlug` the request named. */
  readonly configured?: string | undefined;
}

/**
 * Holds the status model, wakes itself up when a snooze or a rate-limit wait ends (so completions resume without
 * the user doing anything), and tells listeners about changes and about new problems (once per problem).
 */
export class StatusController {
  private state: StatusModel;
  /** The last kind listeners heard about; derived kinds change with time alone, so compare against this. */
  private shown: StatusKind;
  private timer: unknown;
  private readonly changeListeners = new Set<(kind: StatusKind) => void>();
  private readonly noticeListeners = new Set<(notice: Notice) => void>();

  private probing = false;
  private disposed = false;

  /**
   * `probe` asks the relay whether it answers at all (a cheap authenticated GET); with it, an unreachable relay is
   * asked again on the backoff schedule and the status returns to ready as soon as it answers, without a keystroke.
   */
  constructor(
    private readonly clock: Clock,
    initial: StatusModel,
    private readonly probe?: () => Promise<{ readonly reachable: boolean; readonly message: string }>,
  ) {
    this.state = initial;
    this.shown = deriveStatus(initial, clock.now());
  }

  get model(): StatusModel {
    return this.state;
  }

  get kind(): StatusKind {
    return deriveStatus(this.state, this.clock.now());
  }

  gate(): Gate {
    return gateOf(this.state, this.clock.now());
  }

  dispatch(event: StatusEvent): void {
    const now = this.clock.now();
    const before = this.state;
    this.state = reduceStatus(before, event, now);
    this.armTimer(now);
    const problem = this.state.problem;
    if (problem && isNoticeKind(problem.kind) && problem.kind !== before.problem?.kind) {
      const notice: Notice =
        problem.kind === "wrongWorkspace"
          ? {
              kind: problem.kind,
              message: problem.message,
              keyWorkspace: problem.keyWorkspace,
              configured: problem.configured,
            }
          : { kind: problem.kind, message: problem.message };
      for (const listener of this.noticeListeners) listener(notice);
    }
    const kind = deriveStatus(this.state, now);
    if (kind === this.shown) return;
    this.shown = kind;
    for (const listener of this.changeListeners) listener(kind);
  }

  onChange(listener: (kind: StatusKind) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  onNotice(listener: (notice: Notice) => void): () => void {
    this.noticeListeners.add(listener);
    return () => this.noticeListeners.delete(listener);
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.changeListeners.clear();
    this.noticeListeners.clear();
  }

  private armTimer(now: number): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    const problem = this.state.problem;
    const probeAt = problem?.kind === "unreachable" && this.probe !== undefined ? problem.retryAt : undefined;
    // Unlike the others, requests in flight are still in flight after their deadline's tick: only one still to come.
    const requesting = requestingShownAt(this.state);
    const deadlines = [
      this.state.snoozedUntil,
      problem?.kind === "rateLimited" ? problem.until : undefined,
      probeAt,
      requesting > now && Number.isFinite(requesting) ? requesting : undefined,
    ]
      .filter((at): at is number => at !== undefined)
      .map((at) => Math.max(at, now));
    if (deadlines.length === 0 || this.disposed) return;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        const problemNow = this.state.problem;
        if (problemNow?.kind === "unreachable" && problemNow.retryAt <= this.clock.now()) void this.runProbe();
        else this.dispatch({ type: "tick" });
      },
      Math.min(...deadlines) - now,
    );
  }

  private async runProbe(): Promise<void> {
    if (this.probe === undefined || this.probing) return;
    this.probing = true;
    let result: { reachable: boolean; message: string };
    try {
      result = await this.probe();
    } catch (error) {
      result = { reachable: false, message: error instanceof Error ? error.message : String(error) };
    } finally {
      this.probing = false;
    }
    if (!this.disposed) this.dispatch({ type: "probed", ...result });
  }
}
