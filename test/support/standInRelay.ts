import assert from "node:assert/strict";
import { startTestRelay, type TestRelay } from "./relayHarness";
import type { StandIn } from "./standIns/server";

/**
 * A relay whose upstream is a model server's stand-in, as the tests of what reaches a model server start them: the
 * stand-in's OpenAI-style base (`<origin>/v1`) unless `env` names another URL. `close()` stops the relay, then the
 * stand-in.
 */
export interface StandInRelay<S extends StandIn> {
  readonly standIn: S;
  readonly relay: TestRelay;
  close(): Promise<void>;
}

export async function startStandInRelay<S extends StandIn>(
  standIn: S,
  env: Record<string, string>,
): Promise<StandInRelay<S>> {
  const relay = await startTestRelay({ env: { TAB_RELAY_UPSTREAM_URL: `${standIn.origin}/v1`, ...env } });
  return {
    standIn,
    relay,
    async close() {
      await relay.close();
      await standIn.close();
    },
  };
}

/** Runs `check` against a relay in front of `standIn`, and stops both whatever it does. */
export async function withStandInRelay<S extends StandIn>(
  standIn: S,
  env: Record<string, string>,
  check: (started: StandInRelay<S>) => Promise<void>,
): Promise<void> {
  const started = await startStandInRelay(standIn, env);
  try {
    await check(started);
  } finally {
    await started.close();
  }
}

/** The JSON body of the last request the stand-in received. */
export function lastBody(standIn: StandIn): Record<string, unknown> {
  const body = standIn.requests.at(-1)?.body;
  assert.ok(body && typeof body === "object", "the stand-in got a JSON body");
  return body as Record<string, unknown>;
}

/** The value of the sample `name{labels}` on the relay's /metrics, 0 when it has none yet. */
export async function metricValue(relay: TestRelay, name: string, labels: string): Promise<number> {
  const text = await relay.relay.metrics.render();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
  return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
}
