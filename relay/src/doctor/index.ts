import type { WallClock } from "../clock";
import type { DoctorConfig } from "../config";
import { createHttpPost } from "../providers/httpPost";
import { type ExitCode, jsonReport, runChecks, textReport } from "./checks";
import { createProbeClient } from "./http";
import { upstreamCheck } from "./upstreamCheck";

export { type CheckResult, type CheckStatus, type DoctorCheck, type DoctorReport, type ExitCode, exitCodeOf, jsonReport, runChecks, textReport } from "./checks";

export interface DoctorOutput {
  /** One JSON object instead of the text report and its progress lines. */
  json: boolean;
  write(text: string): void;
  clock: WallClock;
}

/**
 * `tab-relay doctor`: runs the checks, writes the progress lines as they come and the report at the end, and
 * returns the exit code. The upstream API key never reaches the output, even when a server echoes it back.
 */
export async function runDoctor(config: DoctorConfig, output: DoctorOutput): Promise<ExitCode> {
  const key = config.upstreamApiKey;
  const write = (text: string) => output.write(key ? text.split(key).join("[redacted]") : text);
  const probe = createProbeClient();
  const post = createHttpPost({ maxSockets: 2 });
  try {
    const report = await runChecks([upstreamCheck(config, { probe, post, clock: output.clock })], output.json ? undefined : (line) => write(`${line}\n`));
    write(output.json ? jsonReport(report) : textReport(report));
    return report.exitCode;
  } finally {
    await Promise.all([probe.close(), post.destroy()]);
  }
}
