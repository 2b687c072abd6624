import type { WallClock } from "../../clock";
import type { DoctorCheck } from "../checks";
import { errorText, operatorResult } from "./result";

/**
 * Beyond this, relays sharing a database disagree about time: when a claim on an event lapses and a retry is due,
 * and the order of message ids (which sort by creation time) written by different relays.
 */
export const SKEW_WARN_MS = 2_000;
/**
 * Standard Webhooks' receivers refuse a delivery whose webhook-timestamp is more than 5 minutes from their own clock
 * (node_modules/standardwebhooks/dist/index.js, WEBHOOK_TOLERANCE_IN_SECONDS = 5 * 60): beyond it, every delivery fails.
 */
export const SKEW_FAIL_MS = 5 * 60 * 1000;

/** A server whose clock the relay's can be compared with. */
export interface ReferenceClock {
  name: string;
  now(): Promise<number>;
}

/**
 * This machine's clock against the servers the relay uses (PostgreSQL's clock_timestamp(), Redis's TIME), measured
 * as the server's reading minus the midpoint of ours around it; the round trip bounds the error. A reference that
 * cannot be read is left out (its own check says why).
 */
export function clockCheck(references: readonly ReferenceClock[], clock: WallClock): DoctorCheck {
  const name = "clock";
  const label = "Clock";
  return {
    name,
    async run() {
      const readings: { name: string; skew_ms: number; error_ms: number }[] = [];
      const unread: string[] = [];
      for (const reference of references) {
        const before = clock.now();
        let server: number;
        try {
          server = await reference.now();
        } catch (error) {
          unread.push(`${reference.name}: ${errorText(error)}`);
          continue;
        }
        const after = clock.now();
        readings.push({
          name: reference.name,
          skew_ms: Math.round((before + after) / 2 - server),
          error_ms: Math.ceil((after - before) / 2),
        });
      }
      const details = { readings, unread };
      const sync =
        "synchronise this machine's clock (NTP: `timedatectl set-ntp true`, or chrony), and the servers' too";
      if (readings.length === 0) {
        return operatorResult(name, label, {
          status: "ok",
          summary:
            references.length === 0
              ? "nothing to compare with (no PostgreSQL or Redis server)"
              : "no server's clock could be read",
          notes: [
            "webhook receivers check each delivery's timestamp against their own clock (5 minutes' tolerance): keep this machine's clock synchronised (`timedatectl` shows \"System clock synchronized: yes\")",
          ],
          details,
        });
      }
      const described = readings.map((r) => `${describeSkew(r.skew_ms)} ${r.name}'s (±${r.error_ms} ms)`);
      // The part of the skew the round trip cannot explain.
      const worst = Math.max(...readings.map((r) => Math.abs(r.skew_ms) - r.error_ms));
      if (worst > SKEW_FAIL_MS) {
        return operatorResult(name, label, {
          status: "failed",
          summary: `this machine's clock is ${described.join("; ")}`,
          notes: [
            "webhook receivers that follow Standard Webhooks refuse timestamps more than 5 minutes off: every delivery would fail; sessions would also end at the wrong time",
          ],
          todo: [sync],
          details,
        });
      }
      if (worst > SKEW_WARN_MS) {
        return operatorResult(name, label, {
          status: "warn",
          summary: `this machine's clock is ${described.join("; ")}`,
          notes: [
            "relays sharing a database then disagree about when claims on events lapse and retries are due, and message ids written by different relays sort out of order",
          ],
          todo: [sync],
          details,
        });
      }
      return operatorResult(name, label, {
        status: "ok",
        summary: `within ${SKEW_WARN_MS / 1000} s: ${described.join("; ")}`,
        details,
      });
    },
  };
}

function describeSkew(ms: number): string {
  const tenths = Math.round(Math.abs(ms) / 100);
  const size =
    tenths >= 100
      ? `${Math.round(Math.abs(ms) / 1000)} s`
      : tenths >= 10
        ? `${(tenths / 10).toFixed(1)} s`
        : `${Math.abs(ms)} ms`;
  return ms >= 0 ? `${size} ahead of` : `${size} behind`;
}
