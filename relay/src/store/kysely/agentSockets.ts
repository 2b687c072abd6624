import type { Db } from "../schema";
import type { Store } from "../types";

export function agentSocketsStore(db: Db): Store["agentSockets"] {
  return {
    async mark(agentIds, relayId, until) {
      if (agentIds.length === 0) return;
      await db
        .insertInto("agent_sockets")
        .values(agentIds.map((agentId) => ({ agent_id: agentId, relay_id: relayId, connected_until: until })))
        .onConflict((oc) => oc.columns(["agent_id", "relay_id"]).doUpdateSet({ connected_until: until }))
        .execute();
    },
    async unmark(agentId, relayId) {
      await db.deleteFrom("agent_sockets").where("agent_id", "=", agentId).where("relay_id", "=", relayId).execute();
    },
    async unmarkRelay(relayId) {
      await db.deleteFrom("agent_sockets").where("relay_id", "=", relayId).execute();
    },
    async connected(agentId, now) {
      const row = await db
        .selectFrom("agent_sockets")
        .select("agent_id")
        .where("agent_id", "=", agentId)
        .where("connected_until", ">", now)
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}
