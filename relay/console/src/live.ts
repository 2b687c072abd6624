/** The live connection: one WebSocket to /api/v1/live, reopened with jittered exponential backoff. */
import type { LiveEvent } from "@tab-relay/shared/api";

export type LiveState = "connecting" | "connected" | "disconnected";

export interface LiveHandlers {
  event(event: LiveEvent): void;
  state(state: LiveState): void;
  /** After a reconnection: whatever happened while it was down was missed, so views refetch. */
  reopened(): void;
  /** Asked before each reconnection; false means the session is gone and there is nothing to reconnect to. */
  shouldReconnect(): Promise<boolean>;
}

/** What the live connection needs of a WebSocket (the browser's, or a stand-in in tests). */
export interface LiveSocket {
  addEventListener(type: "open" | "close", listener: () => void): void;
  addEventListener(type: "message", listener: (message: { data: unknown }) => void): void;
  close(code?: number, reason?: string): void;
}

/** The browser, injected so the connection's timing can be tested without one. */
export interface LiveEnvironment {
  /** Opens a socket to /api/v1/live; may throw, like the WebSocket constructor. */
  open(): LiveSocket;
  /** Runs `run` after `ms`; the returned function cancels it. */
  later(run: () => void, ms: number): () => void;
  random(): number;
}

const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 30_000;
/**
 * A connection attempt that has neither opened nor failed by then is given up and retried: a browser can leave one
 * hanging for minutes (a proxy that drops the upgrade, a blocked address), and the console would sit at
 * "Connecting…" missing every live update meanwhile.
 */
export const OPEN_TIMEOUT_MS = 10_000;

export function createLive(handlers: LiveHandlers, env: LiveEnvironment) {
  let socket: LiveSocket | null = null;
  let cancelRetry: (() => void) | undefined;
  let cancelOpenTimeout: (() => void) | undefined;
  let failures = 0;
  let running = false;
  let openedBefore = false;

  function connect(): void {
    handlers.state("connecting");
    let ws: LiveSocket;
    try {
      ws = env.open();
    } catch {
      retryLater();
      return;
    }
    socket = ws;
    cancelOpenTimeout = env.later(() => {
      if (socket !== ws) return;
      socket = null;
      ws.close();
      handlers.state("disconnected");
      retryLater();
    }, OPEN_TIMEOUT_MS);
    ws.addEventListener("open", () => {
      if (socket !== ws) return;
      cancelOpenTimeout?.();
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
      cancelOpenTimeout?.();
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
    const delay = ceiling / 2 + env.random() * (ceiling / 2);
    cancelRetry?.();
    cancelRetry = env.later(() => {
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
      cancelRetry?.();
      cancelOpenTimeout?.();
      const ws = socket;
      socket = null;
      ws?.close(1000, "signed out");
      handlers.state("disconnected");
    },
  };
}
