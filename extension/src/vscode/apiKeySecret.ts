import type * as vscode from "vscode";

const SECRET_ID = "tabRelay.apiKey";

/**
 * The API key from VS Code's SecretStorage, or else from the environment (TAB_RELAY_API_KEY, read by the
 * composition root), for CI, containers and remote hosts where nobody can type a key in.
 */
export class ApiKeyStore {
  private lastRead: string | undefined;

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly environmentKey: string | undefined,
  ) {}

  async get(): Promise<string | undefined> {
    const stored = await this.secrets.get(SECRET_ID);
    if (stored !== undefined && stored !== "") this.lastRead = stored;
    else this.lastRead = this.environmentKey === "" ? undefined : this.environmentKey;
    return this.lastRead;
  }

  /**
   * The key as get() last found it. Once the extension host is shutting down, VS Code cancels every call to the
   * secret storage, so deactivate, which sends the last usage report, can only use the key it already knew.
   */
  get remembered(): string | undefined {
    return this.lastRead;
  }

  /** Where the key comes from, for the log (never the key itself). */
  async source(): Promise<"secret storage" | "TAB_RELAY_API_KEY" | "nowhere"> {
    if (((await this.secrets.get(SECRET_ID)) ?? "") !== "") return "secret storage";
    return (this.environmentKey ?? "") !== "" ? "TAB_RELAY_API_KEY" : "nowhere";
  }

  async set(key: string): Promise<void> {
    await this.secrets.store(SECRET_ID, key);
  }

  async clear(): Promise<void> {
    await this.secrets.delete(SECRET_ID);
  }

  onDidChange(listener: () => void): vscode.Disposable {
    return this.secrets.onDidChange((event) => {
      if (event.key === SECRET_ID) listener();
    });
  }
}
