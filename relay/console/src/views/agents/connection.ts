/** How the agent is reached: its webhook URL, its Socket Mode connection and its token's hint. */
import { h } from "../../dom";
import type { Agent } from "@tab-relay/shared/api";

export function connectionPart(): { element: HTMLElement; update(agent: Agent): void } {
  const webhookValue = h("span", { "data-testid": "webhook-url" });
  const socketValue = h("span", { "data-testid": "socket-status" });
  const tokenValue = h("code", { "data-testid": "token-hint" });
  const connection = h(
    "dl",
    { class: "facts" },
    h("dt", null, "Webhook URL"),
    h("dd", null, webhookValue),
    h("dt", null, "Socket Mode"),
    h("dd", null, socketValue),
    h("dt", null, "Token"),
    h("dd", null, tokenValue),
  );
  const element = h(
    "section",
    { "aria-labelledby": "agent-connection-h", "data-testid": "agent-connection" },
    h("h2", { id: "agent-connection-h" }, "Connection"),
    connection,
  );
  return {
    element,
    update(agent: Agent): void {
      const url = agent.connection?.webhook_url ?? agent.webhook_url ?? null;
      webhookValue.replaceChildren(url ? h("code", null, url) : h("span", { class: "muted" }, "None"));
      const socket = agent.connection?.socket;
      socketValue.dataset.state = socket ?? "unknown";
      if (url && socket !== "connected") {
        // Events go to the webhook: no Socket Mode connection is expected, so its absence is no fault.
        socketValue.className = "socket-unused muted";
        socketValue.textContent = "Not used: events go to the webhook URL";
      } else {
        socketValue.className = `badge socket-${socket ?? "unknown"}`;
        socketValue.textContent =
          socket === "connected"
            ? "Connected"
            : socket === "disconnected"
              ? "Disconnected: events wait until the agent connects"
              : "Unknown";
      }
      tokenValue.textContent = agent.token_hint ?? "–";
    },
  };
}
