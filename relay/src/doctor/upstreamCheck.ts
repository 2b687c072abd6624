import type { WallClock } from "../clock";
import type { DoctorConfig } from "../config";
import type { HttpPost } from "../providers/httpPost";
import { type UpstreamApi, DEFAULT_INFILL_MAX_PREDICT_MS, familyForModel } from "../providers/upstream";
import type { CheckResult, CheckStatus, DoctorCheck } from "./checks";
import type { ProbeClient } from "./http";
import { type Recommendation, SERVER_NAMES, TEMPLATE_ADVICE, envLines, recommend } from "./identify";
import { TEST_MAX_TOKENS, type RoundTrip, sendTestCompletion } from "./roundTrip";
import { type ProbeLine, describeServer, surveyServer } from "./survey";

/** Each probe's limit: a model server answers these from memory, so a slow answer is a finding, not a wait. */
export const PROBE_TIMEOUT_MS = 3_000;

export interface UpstreamCheckDeps {
  probe: ProbeClient;
  /** The relay's own upstream transport, for the test completion. */
  post: HttpPost;
  clock: WallClock;
}

interface Tried {
  api: UpstreamApi;
  fimTemplate?: string | undefined;
  /** Whether the operator chose the mode (TAB_RELAY_UPSTREAM_API) or doctor did. */
  source: "given" | "recommended";
  url: string;
}

/**
 * The model server: what it is, which model, which mode and template the relay should use with it, and one short
 * completion in that mode through the relay's own provider. `failed` when the server answered but no completion
 * came back (or none could be sent), `unreachable` when nothing answered.
 */
export function upstreamCheck(config: DoctorConfig, deps: UpstreamCheckDeps): DoctorCheck {
  return {
    name: "upstream",
    async run(progress) {
      progress(`Checking the model server at ${config.upstreamUrl}`);
      const survey = await surveyServer(
        {
          url: config.upstreamUrl,
          model: config.upstreamModel,
          apiKey: config.upstreamApiKey,
          timeoutMs: Math.min(PROBE_TIMEOUT_MS, config.upstreamTimeoutMs),
        },
        { probe: deps.probe, clock: deps.clock, progress: (line) => progress(probeLine(line)) },
      );
      const lines: string[] = [""];
      const details: Record<string, unknown> = {
        url: survey.given,
        base_url: survey.base,
        root_url: survey.root,
        probes: survey.probes.map(probeJson),
        server: survey.kind
          ? {
              kind: survey.kind,
              name: SERVER_NAMES[survey.kind],
              version: survey.version ?? null,
              evidence: survey.evidence ?? null,
            }
          : null,
        models: survey.models.map((model) => model.id),
        model: survey.model ? { id: survey.model.id, why: survey.model.why } : null,
        recommendation: null,
        tried: null,
        completion: null,
        env: [],
      };
      const done = (status: CheckStatus, summary: string, advice?: string): CheckResult => {
        if (advice !== undefined) {
          details["advice"] = advice;
          lines.push("", `${status === "ok" ? "Note" : "To do"}: ${advice}`);
        }
        return { name: "upstream", status, summary, lines, details };
      };

      if (!survey.reachable) {
        const why = survey.probes[0]?.error ?? "no answer";
        lines.push(`Nothing answered at ${survey.given} (${why}).`);
        return done(
          "unreachable",
          `nothing answered at ${survey.given} (${why})`,
          "check TAB_RELAY_UPSTREAM_URL (scheme, host and port) and that the model server is running",
        );
      }
      lines.push(row("Server", describeServer(survey)));
      lines.push(row("Base URL", `${survey.base} (${survey.baseNote})`));
      const auth = survey.authRefused ? keyAdvice(config.upstreamApiKey !== undefined) : undefined;
      if (!survey.model) {
        lines.push(row("Model", "none: the server listed no model"));
        return done(
          "failed",
          "the server answered, but doctor found no model to try",
          auth ?? "give the model the server serves with --upstream-model (TAB_RELAY_UPSTREAM_MODEL)",
        );
      }
      lines.push(row("Model", `${survey.model.id} (${survey.model.why})`));
      if (survey.loading)
        return done("failed", "llama.cpp is still loading the model", "run doctor again once GET /health answers 200");

      // The name that tells the model's family: TGI's own model id, whatever name requests give.
      const modelName = survey.servedModel ?? survey.model.id;
      const recommendation = recommend({
        kind: survey.kind,
        model: modelName,
        ...(survey.infill === undefined ? {} : { infill: survey.infill }),
        ...(survey.insert === undefined ? {} : { insert: survey.insert }),
        ...(survey.modelFim === undefined ? {} : { modelFim: survey.modelFim }),
      });
      details["recommendation"] = {
        api: recommendation.api,
        fim_template: recommendation.fimTemplate ?? null,
        reason: recommendation.reason,
        advice: recommendation.advice ?? null,
      };
      const api = config.upstreamApi ?? recommendation.api;
      const tried: Tried = {
        api,
        fimTemplate:
          api === "fim"
            ? (config.fimTemplate ??
              (config.upstreamApi === undefined ? recommendation.fimTemplate : familyForModel(modelName)))
            : undefined,
        source: config.upstreamApi === undefined ? "recommended" : "given",
        // llama.cpp's /infill is on the root; the README's examples give infill the root URL.
        url: api === "infill" ? survey.root : survey.base,
      };
      details["tried"] = {
        api: tried.api,
        fim_template: tried.fimTemplate ?? null,
        source: tried.source,
        url: tried.url,
      };
      lines.push(row("Mode", describeMode(tried, recommendation)));
      if (config.fimTemplate !== undefined && api !== "fim")
        lines.push(row("", `TAB_RELAY_FIM_TEMPLATE is left out: it applies to fim only`));
      if (api === "fim" && tried.fimTemplate === undefined) {
        return done(
          "failed",
          "fim needs the model's FIM template, and the model name matches no family",
          recommendation.advice ?? TEMPLATE_ADVICE,
        );
      }

      const env = envLines({
        url: tried.url,
        model: survey.model.id,
        api: tried.api,
        fimTemplate: tried.fimTemplate,
        infillMaxPredictMs:
          config.infillMaxPredictMs === DEFAULT_INFILL_MAX_PREDICT_MS ? undefined : config.infillMaxPredictMs,
      });
      details["env"] = env;
      progress(`Sending one completion (${modeName(tried)}, at most ${TEST_MAX_TOKENS} tokens)…`);
      const trip = await sendTestCompletion(
        {
          api: tried.api,
          url: tried.url,
          model: survey.model.id,
          fimTemplate: tried.fimTemplate,
          infillMaxPredictMs: config.infillMaxPredictMs,
          apiKey: config.upstreamApiKey,
          timeoutMs: config.upstreamTimeoutMs,
        },
        { post: deps.post, clock: deps.clock },
      );
      details["completion"] = completionJson(trip);
      lines.push(row("Completion", `POST ${trip.url}`));
      if (trip.ok) {
        lines.push(
          row(
            "",
            `${trip.text === "" ? "(the model wrote nothing)" : quoted(trip.text)}: first fragment after ${trip.firstFragmentMs === undefined ? "-" : `${trip.firstFragmentMs} ms`}, done after ${trip.totalMs} ms`,
          ),
        );
      } else {
        lines.push(row("", `failed after ${trip.totalMs} ms: ${trip.error ?? "unknown error"}`));
      }
      if (trip.hint !== undefined && (trip.ok || !(trip.error ?? "").includes(trip.hint)))
        lines.push(row("Hint", trip.hint));
      const keyLine = config.upstreamApiKey ? ["  (and TAB_RELAY_UPSTREAM_API_KEY, which doctor does not print)"] : [];
      if (trip.ok) {
        lines.push(
          "",
          "The round trip works. Start the relay with:",
          "",
          ...env.map((line) => `  ${line}`),
          ...keyLine,
        );
        return done(
          "ok",
          `${survey.kind ? SERVER_NAMES[survey.kind] : "the server"} answered a ${modeName(tried)} completion in ${trip.totalMs} ms`,
        );
      }
      lines.push(
        "",
        "The server answered, but the completion failed. The settings doctor tried:",
        "",
        ...env.map((line) => `  ${line}`),
        ...keyLine,
      );
      const refused =
        trip.status === 401 || trip.status === 403 ? keyAdvice(config.upstreamApiKey !== undefined) : undefined;
      return done(
        "failed",
        `the ${modeName(tried)} completion failed: ${trip.error ?? "unknown error"}`,
        failureAdvice(tried, recommendation, refused ?? auth),
      );
    },
  };
}

function failureAdvice(tried: Tried, recommendation: Recommendation, auth: string | undefined): string | undefined {
  if (auth !== undefined) return auth;
  if (tried.source === "given" && tried.api !== recommendation.api)
    return `TAB_RELAY_UPSTREAM_API=${tried.api} was given; for this server doctor recommends ${recommendation.api} (${recommendation.reason})`;
  return undefined;
}

function keyAdvice(given: boolean): string {
  return given
    ? "the server refused the API key: check TAB_RELAY_UPSTREAM_API_KEY"
    : "the server wants an API key: set TAB_RELAY_UPSTREAM_API_KEY (an environment variable, so the key stays out of the process list)";
}

function modeName(tried: Tried): string {
  if (tried.api !== "fim") return tried.api;
  if (tried.fimTemplate === undefined) return "fim with no template";
  return `fim with ${tried.fimTemplate.includes("{") ? "a custom template" : `the ${tried.fimTemplate} template`}`;
}

function describeMode(tried: Tried, recommendation: Recommendation): string {
  if (tried.source === "given") {
    const same = tried.api === recommendation.api;
    return `${modeName(tried)}, as TAB_RELAY_UPSTREAM_API says (doctor ${same ? "recommends it too" : `recommends ${recommendation.api}: ${recommendation.reason}`})`;
  }
  return `${modeName(tried)}: ${recommendation.reason}`;
}

function row(label: string, text: string): string {
  return `${label.padEnd(11)} ${text}`;
}

function probeLine(line: ProbeLine): string {
  if (line.status === undefined)
    return `  ${line.method.padEnd(4)} ${line.url} → no answer after ${line.ms} ms: ${line.told}`;
  return `  ${line.method.padEnd(4)} ${line.url} → ${line.status} in ${line.ms} ms: ${line.told}`;
}

function probeJson(line: ProbeLine): Record<string, unknown> {
  return {
    method: line.method,
    url: line.url,
    status: line.status ?? null,
    ms: line.ms,
    error: line.error ?? null,
    told: line.told,
  };
}

function completionJson(trip: RoundTrip): Record<string, unknown> {
  return {
    ok: trip.ok,
    url: trip.url,
    text: trip.text,
    first_fragment_ms: trip.firstFragmentMs ?? null,
    total_ms: trip.totalMs,
    error: trip.error ?? null,
    hint: trip.hint ?? null,
  };
}

const SHOWN_TEXT_MAX_CHARS = 200;

function quoted(text: string): string {
  return JSON.stringify(text.length > SHOWN_TEXT_MAX_CHARS ? `${text.slice(0, SHOWN_TEXT_MAX_CHARS)}…` : text);
}
