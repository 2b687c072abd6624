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

/**
 * For a person at a terminal: one plain line per entry (`12:00:00 warn  msg key=value`), where JSON would interrupt
 * the start-up banner with a line meant for machines.
 */
export function createTextLogger(options: {
  level: LogLevel;
  write: (line: string) => void;
  now: () => number;
}): Logger {
  const threshold = RANK[options.level];
  const log = (level: Exclude<LogLevel, "silent">) => (msg: string, fields?: LogFields) => {
    if (RANK[level] < threshold) return;
    const time = new Date(options.now()).toISOString().slice(11, 19);
    const extra = Object.entries(fields ?? {})
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => {
        const text = typeof value === "string" ? value : JSON.stringify(value, errorReplacer);
        return `${key}=${/\s/.test(text) ? JSON.stringify(text) : text}`;
      });
    options.write(`${[time, level.padEnd(5), msg, ...extra].join(" ")}\n`);
  };
  return {
    enabled: (level) => RANK[level] >= threshold,
    debug: log("debug"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
  };
}

/** Plain lines for a terminal, JSON for a pipe or a file (a log collector, `| jq`). */
export function createStreamLogger(options: {
  level: LogLevel;
  stream: { isTTY?: boolean; write(line: string): unknown };
  now: () => number;
}): Logger {
  const settings = { level: options.level, write: (line: string) => void options.stream.write(line), now: options.now };
  return options.stream.isTTY === true ? createTextLogger(settings) : createJsonLogger(settings);
}

export const silentLogger: Logger = { enabled: () => false, debug() {}, info() {}, warn() {}, error() {} };

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}
