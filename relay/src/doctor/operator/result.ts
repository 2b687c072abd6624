import type { CheckResult, CheckStatus } from "../checks";

/** The label column of an operator check's first line, and the indent of the lines under it. */
const LABEL_WIDTH = 12;
/** "failed"; "unreachable" pushes its summary one column further. */
const STATUS_WIDTH = 6;
const INDENT = " ".repeat(LABEL_WIDTH + 1 + STATUS_WIDTH + 1);

export interface Finding {
  status: CheckStatus;
  summary: string;
  /** Facts worth reading, one a line. */
  notes?: string[];
  /** What to fix, one a line, each saying how. */
  todo?: string[];
  details?: Record<string, unknown>;
}

/**
 * An operator check's result: one line `Label  status  summary`, then its notes and to-dos indented under it. In
 * JSON, `advice` holds the to-dos and `notes` the notes, beside the check's own fields.
 */
export function operatorResult(name: string, label: string, finding: Finding): CheckResult {
  const notes = finding.notes ?? [];
  const todo = finding.todo ?? [];
  return {
    name,
    status: finding.status,
    summary: finding.summary,
    lines: [
      `${label.padEnd(LABEL_WIDTH)} ${finding.status.padEnd(STATUS_WIDTH)} ${finding.summary}`,
      ...notes.map((note) => `${INDENT}${note}`),
      ...todo.map((line) => `${INDENT}To do: ${line}`),
    ],
    details: { ...finding.details, notes, advice: todo },
  };
}

/** A URL with its password replaced, for a report that may be pasted into a ticket. */
export function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    if (parsed.searchParams.has("password")) parsed.searchParams.set("password", "***");
    return parsed.toString();
  } catch {
    return "(not a URL)";
  }
}

export function errorText(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.map(errorText).join("; ");
  return error instanceof Error ? error.message || (error as NodeJS.ErrnoException).code || error.name : String(error);
}
