/** The live connection: one WebSocket to /api/v1/live, reopened with jittered exponential backoff. */
import type { LiveEvent } from "./types";

export type LiveState = "connecting" | "connected" | "disconnected";

export interface LiveHandlers {
  event(event: LiveEvent): void;
  state(state: LiveState): void;
  /** After a reconnection: whatever happened while it was down was missed, so views refetch. */
  reopened(): void;
  /** Asked before each reconnection; false means the session is gone and there is nothing to reconnect to. */
  shouldReconnect(): Promise<boolean>;
}

const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 30_000;

export function createLive(handlers: LiveHandlers) {
  let socket: WebSocket | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let failures = 0;
  let running = false;
  let openedBefore = false;

  function url(): string {
    return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/v1/live`;
  }

  function connect(): void {
    handlers.state("connecting");
    let ws: WebSocket;
    try {
      ws = new WebSocket(url());
    } catch {
      retryLater();
      return;
    }
    socket = ws;
    ws.addEventListener("open", () => {
      if (socket !== ws) return;
      handlers.state("connected");
      if (openedBefore) handlers.reopened();
      openedBefore = true;
    });
    ws.addEventListener("message", (message) => {
      if (socket !== ws || typeof message.data !== "string") return;
      let event: LiveEvent;
      try {
        event = JSON.parse(message.data) as LiveEvent;
      } catch {
        return;
      }
      // A hello proves the server accepted us, unlike a bare open that may be closed at once; only then start backoff over.
      if (event.type === "hello") failures = 0;
      handlers.event(event);
    });
    ws.addEventListener("close", () => {
      if (socket !== ws) return;
      socket = null;
      if (!running) return;
      handlers.state("disconnected");
      retryLater();
    });
  }

  function retryLater(): void {
    const ceiling = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** failures);
    failures += 1;
    // Jitter spreads the reconnections of many consoles after a relay restart.
    const delay = ceiling / 2 + Math.random() * (ceiling / 2);
    clearTimeout(timer);
    timer = setTimeout(() => {
      void handlers.shouldReconnect().then((again) => {
        if (running && again && !socket) connect();
      });
    }, delay);
  }

  return {
    start(): void {
      if (running) return;
      running = true;
      failures = 0;
      openedBefore = false;
      connect();
    },
    stop(): void {
      running = false;
      clearTimeout(timer);
      const ws = socket;
      socket = null;
      ws?.close(1000, "signed out");
      handlers.state("disconnected");
    },
  };
}
