/**
 * "Ghost text in VS Code" on the home page, the first page after signing in: the install line for the extension this
 * relay serves and the settings line, each with a copy button, then the key command. A relay with no package to serve
 * (an installed relay package carries none) says so instead of offering a line that would fail.
 */
import { EXTENSION_DOWNLOAD_PATH } from "@tab-relay/shared/api";
import { copyable, h, headed } from "../dom";
import { app } from "../state";
import { installLine, SET_API_KEY_COMMAND, setupLine } from "../vscodeSetup";

export function vscodeBlock(): HTMLElement {
  const install = h("div", { "data-testid": "vscode-install" }, copyable(installItem()));
  void fetch(EXTENSION_DOWNLOAD_PATH, { method: "HEAD", cache: "no-store" })
    .then((response) => {
      if (response.status !== 404) return;
      install.replaceChildren(
        h(
          "p",
          { class: "note", "data-testid": "vscode-no-package" },
          "This relay has no extension package to serve: npm run package, in its checkout, builds it.",
        ),
      );
    })
    // Unreachable now means the relay is down; the line stays, as it works once the relay is back.
    .catch(() => undefined);
  return h(
    "section",
    { class: "vscode-setup", "data-testid": "vscode-setup" },
    headed(
      "Ghost text in VS Code",
      "h2",
      install,
      copyable({
        key: "vscode-settings",
        label: "VS Code settings (settings.json)",
        value: setupLine(location.origin, app.session?.workspace.slug ?? ""),
      }),
      h(
        "p",
        { "data-testid": "vscode-key-step" },
        `Then run “${SET_API_KEY_COMMAND}” from the command palette with a key (`,
        h("a", { href: "/keys" }, "API keys"),
        "). Ghost text then shows as you type; Tab accepts it.",
      ),
    ),
  );
}

function installItem() {
  return { key: "vscode-install-line", label: "Install (in a terminal)", value: installLine(location.origin) };
}
