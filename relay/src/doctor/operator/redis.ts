import type { WallClock } from "../../clock";
import type { DoctorCheck } from "../checks";
import type { RedisProbe } from "./probes";
import { errorText, operatorResult, withoutPassword } from "./result";

/** Redis as the relays' shared rate-limit counter: it answers PING. Run only when TAB_RELAY_REDIS_URL is set. */
export function redisCheck(url: string, open: () => Promise<RedisProbe>, clock: WallClock): DoctorCheck {
  const name = "redis";
  const label = "Redis";
  const where = withoutPassword(url);
  return {
    name,
    async run() {
      const started = clock.now();
      try {
        await (await open()).ping();
      } catch (error) {
        const text = errorText(error);
        // A refused password or a missing ACL permission is an answer; anything else is silence.
        const refused = /NOAUTH|WRONGPASS|NOPERM|ERR /.test(text);
        return operatorResult(name, label, {
          status: refused ? "failed" : "unreachable",
          summary: `${where}: ${text}`,
          notes: ["meanwhile each relay counts rate limits on its own (the limits hold per relay, not across them)"],
          todo: [
            refused
              ? "check the user and password in TAB_RELAY_REDIS_URL"
              : "start Redis, or correct TAB_RELAY_REDIS_URL (host and port)",
          ],
          details: { url: where },
        });
      }
      return operatorResult(name, label, {
        status: "ok",
        summary: `${where} answered PING in ${Math.round(clock.now() - started)} ms`,
        details: { url: where },
      });
    },
  };
}
