/**
 * What a person needs to get ghost text from this relay in VS Code, as lines to paste (the README's "Ghost text in
 * VS Code"): the extension downloaded from the relay and installed, the two settings, then the key command.
 */
import { EXTENSION_DOWNLOAD_PATH } from "@tab-relay/shared/api";

/** The palette title of the extension's `tabRelay.setApiKey` (its category and title in extension/package.json). */
export const SET_API_KEY_COMMAND = "Tab Relay: Set API Key";

/** One shell line: the relay's own build of the extension, downloaded and installed with VS Code's `code` command. */
export function installLine(relayUrl: string): string {
  return `curl -fsSLo tab-relay.vsix ${new URL(EXTENSION_DOWNLOAD_PATH, relayUrl).href} && code --install-extension tab-relay.vsix`;
}

/** The extension's settings (extension/README.md) for this relay and workspace, as one line for settings.json. */
export function setupLine(relayUrl: string, slug: string): string {
  return `"tabRelay.relayUrl": ${JSON.stringify(relayUrl)}, "tabRelay.workspaceSlug": ${JSON.stringify(slug)}`;
}
