/**
 * `tab-relay doctor` runs named checks, one after the other, each reporting a status, a one-line summary, the
 * lines of its text report and the fields of its JSON report. The model server is the first ("upstream");
 * operator checks (data folder, database, Redis, public URL, clock, webhook guard) join as further checks.
 */

/**
 * `ok`; `warn`: works, with something to look at; `failed`: reached, but it does not work; `unreachable`:
 * nothing answered.
 */
export type CheckStatus = "ok" | "warn" | "failed" | "unreachable";

export interface CheckResult {
  name: string;
  status: CheckStatus;
  summary: string;
  /** The text report's lines, after the progress lines the check wrote while running. */
  lines: string[];
  /** The check's fields in the JSON report, beside `name`, `status` and `summary`. */
  details: Record<string, unknown>;
}

export interface DoctorCheck {
  readonly name: string;
  /** Never throws: a check that cannot run reports why as its result. */
  run(progress: (line: string) => void): Promise<CheckResult>;
}

/** 0: every check passed (warnings included); 1: something answered but does not work; 2: nothing answered. */
export type ExitCode = 0 | 1 | 2;

export interface DoctorReport {
  ok: boolean;
  exitCode: ExitCode;
  checks: CheckResult[];
}

const EXIT_CODES: Readonly<Record<CheckStatus, ExitCode>> = { ok: 0, warn: 0, failed: 1, unreachable: 2 };

export function exitCodeOf(statuses: readonly CheckStatus[]): ExitCode {
  return statuses.reduce<ExitCode>((worst, status) => Math.max(worst, EXIT_CODES[status]) as ExitCode, 0);
}

export async function runChecks(
  checks: readonly DoctorCheck[],
  progress: (line: string) => void = () => {},
): Promise<DoctorReport> {
  const results: CheckResult[] = [];
  for (const check of checks) results.push(await check.run(progress));
  const exitCode = exitCodeOf(results.map((result) => result.status));
  return { ok: exitCode === 0, exitCode, checks: results };
}

export function textReport(report: DoctorReport): string {
  return `${report.checks.map((check) => check.lines.join("\n")).join("\n\n")}\n`;
}

/** One JSON object: `ok`, `exit_code` and each check as `{name, status, summary, …details}`. */
export function jsonReport(report: DoctorReport): string {
  const checks = report.checks.map((check) => ({
    name: check.name,
    status: check.status,
    summary: check.summary,
    ...check.details,
  }));
  return `${JSON.stringify({ ok: report.ok, exit_code: report.exitCode, checks })}\n`;
}
