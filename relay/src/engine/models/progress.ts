import type { DownloadProgress } from "./download";
import type { PullEvent } from "./downloads";

/**
 * How a pull shows itself. In a terminal: one line rewritten in place, at most ten times a second, with a bar, the
 * size, the speed and the time left. Elsewhere (a pipe, a log file, CI): a line at the start, one per tenth of the
 * file, one for each retry, and one at the end, so a log stays short and every line reads on its own.
 */
export interface ProgressOutput {
  write(text: string): void;
  tty: boolean;
  /** The terminal's width, for the bar; 80 when unknown. */
  columns?: number;
  now(): number;
}

/** 1.65 GB, 531 MB, 12.0 kB: decimal units, as the hub lists sizes. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2)} ${units[unit]}`;
}

/** 45 s, 3m05s, 1h02m. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/** `45%  741 MB / 1.65 GB  12.3 MB/s  1m14s left`, or the retry being waited for. */
export function progressText(progress: DownloadProgress): string {
  const { received, total } = progress;
  const percent = total > 0 ? Math.floor((received / total) * 100) : 0;
  const parts = [`${String(percent).padStart(3)}%`, `${formatBytes(received)} / ${formatBytes(total)}`];
  if (progress.retry) {
    parts.push(`retrying in ${formatDuration(progress.retry.inMs / 1000)} (${progress.retry.why})`);
    return parts.join("  ");
  }
  parts.push(progress.bytesPerSecond === undefined ? "-- MB/s" : `${formatBytes(progress.bytesPerSecond)}/s`);
  if (progress.secondsLeft !== undefined && received < total)
    parts.push(`${formatDuration(progress.secondsLeft)} left`);
  return parts.join("  ").trimEnd();
}

function bar(fraction: number, width: number): string {
  const filled = Math.max(0, Math.min(width, Math.round(fraction * width)));
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}]`;
}

/** A listener for one pull's events, writing to `output`; `finish()` ends the line. */
export function progressReporter(
  label: string,
  output: ProgressOutput,
): ((event: PullEvent) => void) & { finish(): void } {
  let lastDraw = -Infinity;
  let lastTenth = -1;
  let drawn = false;
  let lastLine = "";
  const line = (text: string) => output.write(`${text}\n`);
  const listener = (event: PullEvent) => {
    if (event.kind === "waiting") {
      if (drawn && output.tty) output.write("\n");
      drawn = false;
      line(`${label}: another pull (pid ${event.pid}) is downloading this file; waiting for it`);
      return;
    }
    if (event.kind === "verifying") {
      line(`${label}: checking the sha256 of ${event.path}`);
      return;
    }
    const { progress } = event;
    const text = progressText(progress);
    if (output.tty) {
      const now = output.now();
      const finished = progress.received >= progress.total;
      if (!finished && !progress.retry && now - lastDraw < 100) return;
      lastDraw = now;
      // A pseudo-terminal without a size reports 0 columns.
      const columns = output.columns !== undefined && output.columns > 0 ? output.columns : 80;
      const width = Math.max(10, Math.min(30, columns - label.length - text.length - 6));
      const fraction = progress.total > 0 ? progress.received / progress.total : 0;
      const rendered = `${label} ${bar(fraction, width)} ${text}`.slice(0, Math.max(20, columns - 1));
      // \r and "erase to end of line" rewrite the line in place.
      output.write(`\r${rendered}\u001b[K`);
      drawn = true;
      return;
    }
    const tenth = progress.total > 0 ? Math.floor((progress.received / progress.total) * 10) : 0;
    if (progress.retry || tenth !== lastTenth) {
      lastTenth = tenth;
      const rendered = `${label}: ${text}`;
      if (rendered !== lastLine) line(rendered);
      lastLine = rendered;
    }
  };
  return Object.assign(listener, {
    finish() {
      if (drawn && output.tty) output.write("\n");
      drawn = false;
    },
  });
}
