import type * as vscode from "vscode";

const SECRET_ID = "tabRelay.apiKey";

/**
 * The API key from VS Code's SecretStorage, or else from the environment (TAB_RELAY_API_KEY, read by the
 * composition root), for CI, containers and remote hosts where nobody can type a key in.
 */
export class ApiKeyStore implements vscode.Disposable {
  private lastRead: string | undefined;
  /** What current() answers until the stored key changes; undefined once a change or a failed read forgot it. */
  private held: Promise<string | undefined> | undefined;
  private readonly watching: vscode.Disposable;

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly environmentKey: string | undefined,
  ) {
    // VS Code fires this for a change made in any window: its secret storage service listens to the application
    // storage the secrets are kept in (BaseSecretStorageService.onDidChangeValue, src/vs/platform/secrets/common/
    // secrets.ts), and MainThreadSecretState passes it on to the extension host ($onDidChangePassword).
    this.watching = secrets.onDidChange((event) => {
      if (event.key === SECRET_ID) this.held = undefined;
    });
  }

  /**
   * The key, read from secret storage once and then held until it changes there: for the requests each pause
   * sends. Each read is a call from the extension host to the window (in a browser, over its connection), measured
   * at 8 to 167 ms per pause in the real VS Code e2e while the window was busy drawing the typing.
   */
  current(): Promise<string | undefined> {
    if (this.held === undefined) {
      const read = this.get();
      this.held = read;
      read.catch(() => {
        if (this.held === read) this.held = undefined;
      });
    }
    return this.held;
  }

  /** Reads secret storage now (for commands and settings changes, where a fresh read is wanted). */
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
    this.held = undefined;
  }

  async clear(): Promise<void> {
    await this.secrets.delete(SECRET_ID);
    this.held = undefined;
  }

  dispose(): void {
    this.watching.dispose();
  }

  onDidChange(listener: () => void): vscode.Disposable {
    return this.secrets.onDidChange((event) => {
      if (event.key === SECRET_ID) listener();
    });
  }
}
