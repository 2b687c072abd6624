import type { LogLevel } from "./config";

export type LogFields = Record<string, unknown>;

/** Structured logging: one JSON object per line. Never pass secrets in fields. */
export interface Logger {
  /** Lets callers skip building fields for lines that would not be written. */
  enabled(level: Exclude<LogLevel, "silent">): boolean;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export function createJsonLogger(options: {
  level: LogLevel;
  write: (line: string) => void;
  now: () => number;
}): Logger {
  const threshold = RANK[options.level];
  const log = (level: Exclude<LogLevel, "silent">) => (msg: string, fields?: LogFields) => {
    if (RANK[level] < threshold) return;
    options.write(
      `${JSON.stringify({ time: new Date(options.now()).toISOString(), level, msg, ...fields }, errorReplacer)}\n`,
    );
  };
  return {
    enabled: (level) => RANK[level] >= threshold,
    debug: log("debug"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
  };
}

export const silentLogger: Logger = { enabled: () => false, debug() {}, info() {}, warn() {}, error() {} };

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}
