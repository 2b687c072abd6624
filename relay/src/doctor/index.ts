import type { WallClock } from "../clock";
import type { DoctorConfig } from "../config";
import { createHttpPost } from "../providers/httpPost";
import { type DoctorCheck, type ExitCode, jsonReport, runChecks, textReport } from "./checks";
import { createProbeClient } from "./http";
import { upstreamCheck } from "./upstreamCheck";

export {
  type CheckResult,
  type CheckStatus,
  type DoctorCheck,
  type DoctorReport,
  type ExitCode,
  exitCodeOf,
  jsonReport,
  runChecks,
  textReport,
} from "./checks";

export interface DoctorOutput {
  /** One JSON object instead of the text report and its progress lines. */
  json: boolean;
  write(text: string): void;
  clock: WallClock;
}

/** Checks run after the model server's (a deployment's, see ./operator), with what they hold open. */
export interface MoreChecks {
  checks: readonly DoctorCheck[];
  /** Never to be shown (passwords in URLs), like the upstream API key. */
  secrets: readonly string[];
  close(): Promise<void>;
}

const NO_MORE_CHECKS: MoreChecks = { checks: [], secrets: [], close: async () => undefined };

/**
 * `tab-relay doctor`: runs the checks (the model server's when `config` is given, then `more`), writes the progress
 * lines as they come and the report at the end, and returns the exit code. The upstream API key and the other
 * secrets never reach the output, even when a server echoes them back.
 */
export async function runDoctor(
  config: DoctorConfig | undefined,
  output: DoctorOutput,
  more: MoreChecks = NO_MORE_CHECKS,
): Promise<ExitCode> {
  const secrets = [config?.upstreamApiKey, ...more.secrets].filter(
    (secret): secret is string => secret !== undefined && secret !== "",
  );
  const write = (text: string) =>
    output.write(secrets.reduce((shown, secret) => shown.split(secret).join("[redacted]"), text));
  const probe = createProbeClient();
  const post = createHttpPost({ maxSockets: 2 });
  try {
    const checks = [...(config ? [upstreamCheck(config, { probe, post, clock: output.clock })] : []), ...more.checks];
    const report = await runChecks(checks, output.json ? undefined : (line) => write(`${line}\n`));
    write(output.json ? jsonReport(report) : textReport(report));
    return report.exitCode;
  } finally {
    await Promise.all([probe.close(), post.destroy(), more.close()]);
  }
}
