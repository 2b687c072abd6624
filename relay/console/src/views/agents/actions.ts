/** The agent's actions: a test event, pause and resume, and new secrets (shown once). */
import { api } from "../../api";
import { announce, busy, clearError, confirmDialog, errorSlot, h, secretsPanel, showError } from "../../dom";
import type { Agent, AgentSigningSecretRotated, AgentTokenRotated } from "@tab-relay/shared/api";
import type { AgentContext } from "./common";

export function actionsPart(context: AgentContext): { element: HTMLElement; update(agent: Agent): void } {
  const { base, refresh } = context;
  const controlsError = errorSlot();
  const secrets = h("div", { class: "secrets-slot" });
  const testButton = h("button", { type: "button", "data-testid": "send-test-event" }, "Send test event");
  const pauseButton = h("button", { type: "button", "data-testid": "pause-agent" }, "Pause");
  const resumeButton = h("button", { type: "button", class: "primary", "data-testid": "resume-agent" }, "Resume");
  const tokenButton = h("button", { type: "button", "data-testid": "rotate-token" }, "Set a new token");
  const secretButton = h(
    "button",
    { type: "button", "data-testid": "rotate-signing-secret" },
    "Set a new signing secret",
  );

  /** Runs the action on a click; with `ask`, only once the person has confirmed it. */
  function control(
    button: HTMLButtonElement,
    run: () => Promise<void>,
    ask?: () => { title: string; body: string; confirm: string },
  ): void {
    button.addEventListener("click", () => {
      clearError(controlsError);
      const go = () => void busy(button, run).catch((failure: unknown) => showError(controlsError, failure));
      if (!ask) return go();
      void confirmDialog(ask()).then((confirmed) => {
        if (confirmed) go();
      });
    });
  }
  control(testButton, async () => {
    await api("POST", `${base}/test-event`);
    announce("Test event sent; its delivery appears below");
    await refresh.now();
  });
  for (const [button, other, action, done] of [
    [pauseButton, resumeButton, "pause", "paused"],
    [resumeButton, pauseButton, "resume", "resumed"],
  ] as const) {
    control(button, async () => {
      const agent = await api<Agent>("POST", `${base}/${action}`);
      context.show(agent);
      other.focus();
      announce(`Agent ${done}`);
      refresh.soon();
    });
  }
  control(
    tokenButton,
    async () => {
      const result = await api<AgentTokenRotated>("POST", `${base}/token`);
      secrets.replaceChildren(
        secretsPanel(
          `New token for ${result.agent.name}`,
          [{ key: "token", label: "Token", value: result.token }],
          h("p", null, "The old token stopped working. Give this one to the agent."),
        ),
      );
      refresh.soon();
    },
    () => ({
      title: `Set a new token for ${context.name()}?`,
      body: "Its current token stops working at once: the agent's Agent API calls and its Socket Mode connection are refused until you give it the new token.",
      confirm: "Set a new token",
    }),
  );
  control(
    secretButton,
    async () => {
      const result = await api<AgentSigningSecretRotated>("POST", `${base}/signing-secret`);
      secrets.replaceChildren(
        secretsPanel(
          `New signing secret for ${result.agent.name}`,
          [{ key: "signing-secret", label: "Signing secret", value: result.signing_secret }],
          h("p", null, "Events, retries included, are now signed with this secret only. Give it to the agent."),
        ),
      );
      refresh.soon();
    },
    () => ({
      title: `Set a new signing secret for ${context.name()}?`,
      body: "Events are signed with the new secret at once, retries included: the agent rejects them as forged until you give it the new signing secret. Its token keeps working.",
      confirm: "Set a new signing secret",
    }),
  );

  const element = h(
    "section",
    { "aria-labelledby": "agent-actions-h", "data-testid": "agent-controls" },
    h("h2", { id: "agent-actions-h" }, "Actions"),
    h("div", { class: "toolbar" }, testButton, pauseButton, resumeButton, tokenButton, secretButton),
    controlsError,
    secrets,
  );
  return {
    element,
    update(agent: Agent): void {
      pauseButton.hidden = agent.state === "paused";
      resumeButton.hidden = agent.state === "active";
    },
  };
}
