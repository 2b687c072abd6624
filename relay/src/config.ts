import { BlockList, isIP } from "node:net";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import proxyAddr from "proxy-addr";
import { z } from "zod";
import { DEPRECATED_APIS, UPSTREAM_APIS, type UpstreamApi } from "./providers/upstream/api";
import { NEXT_EDIT_FORMATS, type NextEditFormatName } from "./nextEdits/formats/format";
import { DEFAULT_INFILL_MAX_PREDICT_MS } from "./providers/upstream/modes/infill";
import { DEFAULT_UPSTREAM_LIMITS, type UpstreamLimits } from "./providers/upstream/limits";
import {
  FIM_FAMILIES,
  customTemplateProblems,
  familyForModel,
  isFimFamily,
  templateText,
} from "./providers/upstream/templates";
import { DEFAULT_HUB_URL } from "./engine/models/registry";
import type { ProxySettings } from "./engine/models/transport";

export type Env = Readonly<Record<string, string | undefined>>;

/** Per-minute limits; the defaults are the figures docs/api.md#rate-limits gives. */
export interface RateLimits {
  reads: number;
  writes: number;
  session_reads: number;
  session_writes: number;
  agent_reads: number;
  agent_posts: number;
}

export const DEFAULT_RATE_LIMITS: Readonly<RateLimits> = Object.freeze({
  reads: 300,
  writes: 60,
  session_reads: 200,
  session_writes: 40,
  agent_reads: 240,
  agent_posts: 60,
});

export interface UpstreamConfig {
  url: string;
  model: string;
  apiKey: string | undefined;
  api: UpstreamApi;
  /** The former name TAB_RELAY_UPSTREAM_API was given (`completions`), for a warning at start. */
  apiAlias: string | undefined;
  /** `fim` only: the template, a family name (given, or picked from the model name) or a custom string. */
  fimTemplate: string | undefined;
  /** `infill` only: llama.cpp's `t_max_predict_ms`. */
  infillMaxPredictMs: number;
  timeoutMs: number;
  /** What one completion may take of a model server, in time and in size (issue 19: a server is not trusted). */
  limits: Readonly<UpstreamLimits>;
  /** TAB_RELAY_NEXT_EDIT_FORMAT: how next edits are asked of the model; unset, chosen from the model's name. */
  nextEditFormat?: NextEditFormatName;
}

export interface Config {
  /** The SQLite data folder; unused when `databaseUrl` names a PostgreSQL database. */
  dataDir: string;
  /** `postgres://…`: several relays share this database (and its delivery queue) instead of a SQLite file. */
  databaseUrl: string | undefined;
  /** `redis://…`: rate-limit counters shared by every relay. */
  redisUrl: string | undefined;
  host: string;
  port: number;
  provider: "local" | "openai" | "engine";
  upstream: UpstreamConfig | undefined;
  /** The embedded engine (relay/src/engine/), when a model is configured (`--model`). */
  engine: Readonly<EngineConfig> | undefined;
  rateLimits: Readonly<RateLimits>;
  rateLimitWindowMs: number;
  maxBodyBytes: number;
  shutdownGraceMs: number;
  logLevel: LogLevel;
  cacheEntries: number;
  /** Where people and agents reach this relay, for links in events; the listening address when unset. */
  publicUrl: string | undefined;
  /** Whose `X-Forwarded-For` entries name the client (for per-address limits and logs). */
  trustProxy: TrustProxy;
  /**
   * The bearer token `/metrics` asks for. Unset, `/metrics` answers only a client on this machine that reached the
   * relay directly (no proxy's `X-Forwarded-For`), since its series name every workspace's usage.
   */
  metricsToken: string | undefined;
  /** Serve a data folder or database file that every user may write (else `serve` refuses to start). */
  allowInsecureDataFolder: boolean;
  webhooks: Readonly<WebhookConfig>;
  /** How many days the audit log keeps a record; older ones are pruned in the background. */
  usageRetentionDays: number;
  models: Readonly<ModelsConfig>;
}

/** Where models by name come from (relay/src/engine/models/): the hub or its mirror, extra entries, the proxies. */
export interface ModelsConfig {
  /** TAB_RELAY_MODEL_HUB_URL, else Hugging Face. */
  hubUrl: string;
  /** TAB_RELAY_MODEL_REGISTRY: a JSON file of the operator's own entries. */
  registryFile: string | undefined;
  proxy: Readonly<ProxySettings>;
  /**
   * Proxy variables that could not be used (`HTTPS_PROXY: must be an http:// or https:// proxy URL`). `serve` starts
   * anyway, since only a download needs them: whatever downloads a model refuses to while this is not empty.
   */
  proxyProblems: readonly string[];
}

/** The embedded engine's settings; see docs/engine.md. */
export interface EngineConfig {
  /** A registry name or a GGUF file's path, as given. */
  model: string;
  /** Where node-llama-cpp is installed on first use: TAB_RELAY_ENGINE_DIR, else DATA/engine. */
  dir: string;
  /** Completions run at once: context sequences. */
  sequences: number;
  /** Completions that may wait for a sequence; more are refused with 429. */
  queue: number;
  threads: number;
  /** Tokens per sequence. */
  contextSize: number;
  /** Nice steps the engine child runs below the relay (engine/child/priority.ts). */
  nice: number;
  gpu: "auto" | "off";
  allowUnverified: boolean;
  /** TAB_RELAY_FIM_TEMPLATE as a template string (a family's own, see templateText), used instead of the metadata. */
  fimTemplate: string | undefined;
}

/**
 * Inference threads when TAB_RELAY_ENGINE_THREADS is unset: 1 on a machine of up to 4 cores, where a second thread
 * measured slower whenever anything else ran (shared/notes/embedded-engine.md: 10 tokens/s on 2 threads against
 * 25–34 on 1), else half the cores.
 */
export function defaultEngineThreads(cores: number): number {
  return cores <= 4 ? 1 : Math.min(8, Math.floor(cores / 2));
}

export interface WebhookConfig {
  /** Delays before each retry, in ms; a delivery is tried once plus once per entry. */
  retryScheduleMs: readonly number[];
  /** Lets webhook URLs be plain http and reach private, loopback and link-local addresses. */
  allowPrivate: boolean;
  timeoutMs: number;
  /** How long a Socket Mode agent has to acknowledge an envelope. */
  socketAckTimeoutMs: number;
}

/**
 * No proxy (`false`: the socket's address is the client's), the nearest N hops (each appends the address it saw
 * to `X-Forwarded-For`), or proxies at these addresses and CIDR ranges (proxy-addr's notation).
 */
export type TrustProxy = false | number | readonly string[];

/** 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: Svix's schedule, about a day in all. */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = Object.freeze([
  5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
]);

export const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Each setting: its environment variable and, when it has one, its command-line flag. */
export const SETTINGS = {
  dataDir: { env: "TAB_RELAY_DATA", flag: "data" },
  databaseUrl: { env: "TAB_RELAY_DATABASE_URL", flag: "database" },
  redisUrl: { env: "TAB_RELAY_REDIS_URL", flag: "redis" },
  host: { env: "TAB_RELAY_HOST", flag: "host" },
  port: { env: "TAB_RELAY_PORT", flag: "port" },
  provider: { env: "TAB_RELAY_PROVIDER", flag: "provider" },
  upstreamUrl: { env: "TAB_RELAY_UPSTREAM_URL", flag: "upstream-url" },
  upstreamModel: { env: "TAB_RELAY_UPSTREAM_MODEL", flag: "upstream-model" },
  upstreamApiKey: { env: "TAB_RELAY_UPSTREAM_API_KEY", flag: "upstream-api-key" },
  upstreamApi: { env: "TAB_RELAY_UPSTREAM_API", flag: "upstream-api" },
  fimTemplate: { env: "TAB_RELAY_FIM_TEMPLATE", flag: "fim-template" },
  infillMaxPredictMs: { env: "TAB_RELAY_INFILL_MAX_PREDICT_MS", flag: "infill-max-predict-ms" },
  upstreamTimeoutMs: { env: "TAB_RELAY_UPSTREAM_TIMEOUT_MS", flag: "upstream-timeout-ms" },
  upstreamDeadlineMs: { env: "TAB_RELAY_UPSTREAM_DEADLINE_MS", flag: "upstream-deadline-ms" },
  upstreamMaxBodyBytes: { env: "TAB_RELAY_UPSTREAM_MAX_BODY_BYTES", flag: "upstream-max-body-bytes" },
  upstreamMaxEventChars: { env: "TAB_RELAY_UPSTREAM_MAX_EVENT_CHARS", flag: "upstream-max-event-chars" },
  upstreamMaxStreamBytes: { env: "TAB_RELAY_UPSTREAM_MAX_STREAM_BYTES", flag: "upstream-max-stream-bytes" },
  nextEditFormat: { env: "TAB_RELAY_NEXT_EDIT_FORMAT", flag: "next-edit-format" },
  rateLimits: { env: "TAB_RELAY_RATE_LIMITS", flag: "rate-limits" },
  maxBodyBytes: { env: "TAB_RELAY_MAX_BODY_BYTES", flag: "max-body-bytes" },
  shutdownGraceMs: { env: "TAB_RELAY_SHUTDOWN_GRACE_MS", flag: "shutdown-grace-ms" },
  logLevel: { env: "TAB_RELAY_LOG_LEVEL", flag: "log-level" },
  cacheEntries: { env: "TAB_RELAY_CACHE_ENTRIES", flag: "cache-entries" },
  publicUrl: { env: "TAB_RELAY_PUBLIC_URL", flag: "public-url" },
  trustProxy: { env: "TAB_RELAY_TRUST_PROXY", flag: "trust-proxy" },
  metricsToken: { env: "TAB_RELAY_METRICS_TOKEN", flag: "metrics-token" },
  webhookRetrySchedule: { env: "TAB_RELAY_WEBHOOK_RETRY_SCHEDULE", flag: "webhook-retry-schedule" },
  webhookAllowPrivate: { env: "TAB_RELAY_WEBHOOK_ALLOW_PRIVATE", flag: "webhook-allow-private" },
  allowInsecureDataFolder: { env: "TAB_RELAY_ALLOW_INSECURE_DATA_FOLDER", flag: "allow-insecure-data-folder" },
  webhookTimeoutMs: { env: "TAB_RELAY_WEBHOOK_TIMEOUT_MS", flag: "webhook-timeout-ms" },
  socketAckTimeoutMs: { env: "TAB_RELAY_SOCKET_ACK_TIMEOUT_MS", flag: "socket-ack-timeout-ms" },
  usageRetentionDays: { env: "TAB_RELAY_USAGE_RETENTION_DAYS", flag: "usage-retention-days" },
  modelHubUrl: { env: "TAB_RELAY_MODEL_HUB_URL", flag: "model-hub-url" },
  modelRegistry: { env: "TAB_RELAY_MODEL_REGISTRY", flag: "model-registry" },
  model: { env: "TAB_RELAY_MODEL", flag: "model" },
  engineDir: { env: "TAB_RELAY_ENGINE_DIR", flag: "engine-dir" },
  engineSequences: { env: "TAB_RELAY_ENGINE_SEQUENCES", flag: "engine-sequences" },
  engineQueue: { env: "TAB_RELAY_ENGINE_QUEUE", flag: "engine-queue" },
  engineThreads: { env: "TAB_RELAY_ENGINE_THREADS", flag: "engine-threads" },
  engineContext: { env: "TAB_RELAY_ENGINE_CONTEXT", flag: "engine-context" },
  engineNice: { env: "TAB_RELAY_ENGINE_NICE", flag: "engine-nice" },
  gpu: { env: "TAB_RELAY_GPU", flag: "gpu" },
  allowUnverified: { env: "TAB_RELAY_ALLOW_UNVERIFIED", flag: "allow-unverified" },
} as const;

export type SettingName = keyof typeof SETTINGS;
export type Overrides = Partial<Record<SettingName, string | undefined>>;

const integer = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const httpUrl = z.url({ protocol: /^https?$/ });

/** More proxies than any real chain has; a larger count is a typo. */
const MAX_PROXY_HOPS = 100;

const trustProxy = z.string().transform((value, ctx): TrustProxy => {
  const fail = (message: string) => {
    ctx.addIssue({ code: "custom", message });
    return z.NEVER;
  };
  if (value === "false") return false;
  if (value === "true") {
    return fail(
      "true would believe any X-Forwarded-For a client makes up; give the number of proxies in front of the relay, or their addresses",
    );
  }
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    return hops >= 1 && hops <= MAX_PROXY_HOPS
      ? hops
      : fail(`a hop count is 1 to ${MAX_PROXY_HOPS} (false trusts no proxy)`);
  }
  const entries = value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  const bad: string[] = [];
  for (const entry of entries) {
    // proxy-addr would read a bare number as an IPv4 address in its 32-bit form; here it can only be a misplaced hop count.
    if (/^\d+$/.test(entry)) {
      bad.push(`${entry} (a hop count stands alone)`);
      continue;
    }
    try {
      proxyAddr.compile(entry);
    } catch (error) {
      bad.push(`${entry} (${(error as Error).message})`);
    }
  }
  if (entries.length === 0) bad.push(`"${value}" (no address)`);
  if (bad.length > 0)
    return fail(
      `must be false, a hop count, or a comma-separated list of addresses and CIDR ranges; not ${bad.join(", ")}`,
    );
  return Object.freeze(entries);
});

const RawConfig = z.object({
  dataDir: z.string().min(1).optional(),
  databaseUrl: z.url({ protocol: /^postgres(ql)?$/, error: "must be a postgres:// URL" }).optional(),
  redisUrl: z.url({ protocol: /^rediss?$/, error: "must be a redis:// or rediss:// URL" }).optional(),
  host: z.string().min(1).default("127.0.0.1"),
  port: integer(0, 65535).default(8787),
  provider: z.enum(["local", "openai", "engine"]).optional(),
  upstreamUrl: httpUrl.optional(),
  upstreamModel: z.string().min(1).optional(),
  upstreamApiKey: z.string().min(1).optional(),
  upstreamApi: z.enum([...UPSTREAM_APIS, ...Object.keys(DEPRECATED_APIS)]).default("chat"),
  fimTemplate: z
    .string()
    .min(1)
    .superRefine((template, ctx) => {
      for (const message of fimTemplateProblems(template)) ctx.addIssue({ code: "custom", message });
    })
    .optional(),
  infillMaxPredictMs: integer(0, 600_000).optional(),
  upstreamTimeoutMs: integer(100, 600_000).default(10_000),
  upstreamDeadlineMs: integer(100, 3_600_000).default(DEFAULT_UPSTREAM_LIMITS.deadlineMs),
  upstreamMaxBodyBytes: integer(1024, 256 * 1024 * 1024).default(DEFAULT_UPSTREAM_LIMITS.maxBodyBytes),
  upstreamMaxEventChars: integer(1024, 256 * 1024 * 1024).default(DEFAULT_UPSTREAM_LIMITS.maxEventChars),
  upstreamMaxStreamBytes: integer(1024, 1024 * 1024 * 1024).default(DEFAULT_UPSTREAM_LIMITS.maxStreamBytes),
  nextEditFormat: z.enum(NEXT_EDIT_FORMATS).optional(),
  rateLimits: z.string().optional(),
  maxBodyBytes: integer(1024, 64 * 1024 * 1024).default(512 * 1024),
  shutdownGraceMs: integer(0, 600_000).default(10_000),
  logLevel: z.enum(LOG_LEVELS).default("info"),
  cacheEntries: integer(0, 1_000_000).default(1000),
  publicUrl: httpUrl.transform((url) => url.replace(/\/+$/, "")).optional(),
  trustProxy: trustProxy.default(false),
  // Long enough that guessing it is hopeless; Prometheus sends it as `authorization: {credentials: ...}`.
  metricsToken: z.string().min(32, "must be at least 32 characters (e.g. `openssl rand -hex 32`)").max(512).optional(),
  webhookRetrySchedule: z
    .string()
    .regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, "must be a comma-separated list of milliseconds, e.g. 5000,300000")
    .transform((list) => list.split(",").map((ms) => Number(ms.trim())))
    .refine(
      (list) => list.length <= 20 && list.every((ms) => ms <= 7 * 24 * 3600 * 1000),
      "allows at most 20 retries of at most 7 days each",
    )
    .optional(),
  webhookAllowPrivate: z
    .enum(["true", "false", "1", "0"], "must be true or false")
    .transform((v) => v === "true" || v === "1")
    .default(false),
  allowInsecureDataFolder: z
    .enum(["true", "false", "1", "0"], "must be true or false")
    .transform((v) => v === "true" || v === "1")
    .default(false),
  webhookTimeoutMs: integer(100, 60_000).default(15_000),
  socketAckTimeoutMs: integer(100, 60_000).default(10_000),
  usageRetentionDays: integer(1, 3650).default(90),
  modelHubUrl: httpUrl
    .refine((url) => !/[?#]/.test(url), "must be the hub's base address, without a query or fragment")
    .refine((url) => {
      const parsed = new URL(url);
      return parsed.username === "" && parsed.password === "";
    }, "must not carry a user name or password (they would show in messages and logs)")
    .transform((url) => url.replace(/\/+$/, ""))
    .optional(),
  modelRegistry: z.string().min(1).optional(),
  model: z.string().min(1).max(4096).optional(),
  engineDir: z.string().min(1).optional(),
  engineSequences: integer(1, 64).default(2),
  engineQueue: integer(0, 10_000).optional(),
  engineThreads: integer(1, 256).optional(),
  engineContext: integer(256, 131_072).default(2048),
  engineNice: integer(0, 19).default(5),
  gpu: z.enum(["auto", "off"]).default("auto"),
  allowUnverified: z
    .enum(["true", "false", "1", "0"], "must be true or false")
    .transform((v) => v === "true" || v === "1")
    .default(false),
});

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/**
 * Reads the configuration once: flags win over environment variables, empty values count as unset,
 * and every problem is reported together. The result is frozen.
 */
export function loadConfig(env: Env, overrides: Overrides = {}): Readonly<Config> {
  const raw: Record<string, string> = {};
  for (const [name, setting] of Object.entries(SETTINGS) as [SettingName, (typeof SETTINGS)[SettingName]][]) {
    const value = overrides[name] ?? env[setting.env];
    if (value !== undefined && value.trim() !== "") raw[name] = value.trim();
  }
  const problems: string[] = [];
  const parsed = RawConfig.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = String(issue.path[0]) as SettingName;
      const setting = SETTINGS[name];
      const label = setting ? `${setting.env} (--${setting.flag})` : name;
      problems.push(`${label}: ${issue.message}`);
    }
  }
  if (raw["dataDir"] === undefined && raw["databaseUrl"] === undefined) {
    problems.push(
      `${SETTINGS.dataDir.env} (--${SETTINGS.dataDir.flag}): is required (or ${SETTINGS.databaseUrl.env} for PostgreSQL)`,
    );
  }
  const rateLimits = parseRateLimits(raw["rateLimits"], problems);
  // A proxy setting only matters to model downloads: one this relay cannot use must not stop a relay that never
  // downloads, so its problem is kept for the download to report (config.models.proxyProblems).
  const proxyProblems: string[] = [];
  const proxy = proxyFromEnv(env, proxyProblems);
  if (!parsed.success) throw new ConfigError(problems);
  const c = parsed.data;
  const provider = c.provider ?? (c.model ? "engine" : c.upstreamUrl ? "openai" : "local");
  if (provider === "engine" && !c.model) {
    problems.push(
      `${label("model")}: is required when the provider is engine (a name from \`tab-relay models list\` or a .gguf file)`,
    );
  }
  if (provider !== "engine" && c.model) {
    problems.push(
      `${label("model")}: runs the embedded engine, so it cannot go with the ${provider} provider; leave out one of them`,
    );
  }
  if (provider === "openai" && !c.upstreamUrl) {
    problems.push(
      `${SETTINGS.upstreamUrl.env} (--${SETTINGS.upstreamUrl.flag}): is required when the provider is openai`,
    );
  }
  if (provider === "openai" && !c.upstreamModel) {
    problems.push(
      `${SETTINGS.upstreamModel.env} (--${SETTINGS.upstreamModel.flag}): is required when the provider is openai`,
    );
  }
  const api: UpstreamApi = DEPRECATED_APIS[c.upstreamApi] ?? (c.upstreamApi as UpstreamApi);
  const fimTemplate = upstreamTemplate(
    provider === "openai" ? api : undefined,
    c.upstreamModel,
    c.fimTemplate,
    problems,
  );
  if (provider === "openai" && c.infillMaxPredictMs !== undefined && api !== "infill") {
    problems.push(
      `${label("infillMaxPredictMs")}: only applies when ${SETTINGS.upstreamApi.env} is infill (it is ${api})`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const upstream: UpstreamConfig | undefined =
    provider === "openai" && c.upstreamUrl && c.upstreamModel
      ? Object.freeze({
          url: c.upstreamUrl,
          model: c.upstreamModel,
          apiKey: c.upstreamApiKey,
          api,
          apiAlias: api === c.upstreamApi ? undefined : c.upstreamApi,
          fimTemplate,
          infillMaxPredictMs: c.infillMaxPredictMs ?? DEFAULT_INFILL_MAX_PREDICT_MS,
          timeoutMs: c.upstreamTimeoutMs,
          limits: Object.freeze({
            deadlineMs: c.upstreamDeadlineMs,
            maxBodyBytes: c.upstreamMaxBodyBytes,
            maxEventChars: c.upstreamMaxEventChars,
            maxStreamBytes: c.upstreamMaxStreamBytes,
          }),
          ...(c.nextEditFormat === undefined ? {} : { nextEditFormat: c.nextEditFormat }),
        })
      : undefined;
  return Object.freeze({
    dataDir: c.dataDir ?? "",
    databaseUrl: c.databaseUrl,
    redisUrl: c.redisUrl,
    host: c.host,
    port: c.port,
    provider,
    upstream,
    engine:
      provider === "engine" && c.model
        ? Object.freeze({
            model: c.model,
            dir: c.engineDir ?? join(c.dataDir ?? ".", "engine"),
            sequences: c.engineSequences,
            queue: c.engineQueue ?? c.engineSequences * 4,
            threads: c.engineThreads ?? defaultEngineThreads(availableParallelism()),
            contextSize: c.engineContext,
            nice: c.engineNice,
            gpu: c.gpu,
            allowUnverified: c.allowUnverified,
            fimTemplate:
              c.fimTemplate === undefined
                ? undefined
                : isFimFamily(c.fimTemplate)
                  ? templateText(c.fimTemplate)
                  : c.fimTemplate,
          })
        : undefined,
    rateLimits: Object.freeze(rateLimits),
    rateLimitWindowMs: 60_000,
    maxBodyBytes: c.maxBodyBytes,
    shutdownGraceMs: c.shutdownGraceMs,
    logLevel: c.logLevel,
    cacheEntries: c.cacheEntries,
    publicUrl: c.publicUrl,
    trustProxy: c.trustProxy,
    metricsToken: c.metricsToken,
    allowInsecureDataFolder: c.allowInsecureDataFolder,
    webhooks: Object.freeze({
      retryScheduleMs: Object.freeze(c.webhookRetrySchedule ?? [...DEFAULT_RETRY_SCHEDULE_MS]),
      allowPrivate: c.webhookAllowPrivate,
      timeoutMs: c.webhookTimeoutMs,
      socketAckTimeoutMs: c.socketAckTimeoutMs,
    }),
    usageRetentionDays: c.usageRetentionDays,
    models: modelsConfig(c, proxy, proxyProblems),
  });
}

function label(name: SettingName): string {
  return `${SETTINGS[name].env} (--${SETTINGS[name].flag})`;
}

/** A family name, or a custom string that holds {prefix} and no placeholder but {prefix}, {suffix}, {context}. */
function fimTemplateProblems(template: string): string[] {
  if (template.includes("{")) return customTemplateProblems(template);
  if (isFimFamily(template)) return [];
  return [
    `unknown family "${template}" (families: ${FIM_FAMILIES.join(", ")}; or a custom template holding {prefix}, {suffix} and {context})`,
  ];
}

/**
 * The FIM template: TAB_RELAY_FIM_TEMPLATE, else the family the model name picks; `fim` without either is a
 * configuration error, since a wrong template makes the model write nonsense rather than fail. `api` is undefined
 * when no upstream is used.
 */
function upstreamTemplate(
  api: UpstreamApi | undefined,
  model: string | undefined,
  template: string | undefined,
  problems: string[],
): string | undefined {
  if (template !== undefined) {
    if (api !== undefined && api !== "fim")
      problems.push(`${label("fimTemplate")}: only applies when ${SETTINGS.upstreamApi.env} is fim (it is ${api})`);
    return api === "fim" ? template : undefined;
  }
  if (api !== "fim" || model === undefined) return undefined;
  const family = familyForModel(model);
  if (family === undefined) {
    problems.push(
      `${label("fimTemplate")}: ${SETTINGS.upstreamApi.env}=fim needs the model's FIM template, and the model name "${model}" matches no family; ` +
        `set it to one of ${FIM_FAMILIES.join(", ")}, or to a custom template holding {prefix}, {suffix} and {context}`,
    );
  }
  return family;
}

/** `reads=300,writes=60,...`: any subset of the six names; the rest keep their defaults. */
export function parseRateLimits(value: string | undefined, problems: string[]): RateLimits {
  const limits: RateLimits = { ...DEFAULT_RATE_LIMITS };
  if (value === undefined) return limits;
  const label = `${SETTINGS.rateLimits.env} (--${SETTINGS.rateLimits.flag})`;
  for (const part of value.split(",")) {
    const match = /^\s*([a-z_]+)\s*=\s*(\d+)\s*$/.exec(part);
    if (!match) {
      problems.push(`${label}: "${part.trim()}" is not of the form name=number`);
      continue;
    }
    const [, name = "", amount = ""] = match;
    if (!(name in limits)) {
      problems.push(`${label}: unknown limit "${name}" (known: ${Object.keys(DEFAULT_RATE_LIMITS).join(", ")})`);
      continue;
    }
    const n = Number(amount);
    if (n < 1 || n > 10_000_000) problems.push(`${label}: ${name} must be between 1 and 10000000`);
    else limits[name as keyof RateLimits] = n;
  }
  return limits;
}

/** Flags that can carry a secret, and the variable that keeps it out of the process list. */
const SECRET_FLAGS: readonly { name: SettingName; what: string; secret: (value: string) => boolean }[] = [
  { name: "upstreamApiKey", what: "the upstream API key", secret: () => true },
  { name: "metricsToken", what: "the metrics token", secret: () => true },
  { name: "databaseUrl", what: "a database password", secret: (value) => urlHasPassword(value) },
  { name: "redisUrl", what: "a Redis password", secret: (value) => urlHasPassword(value) },
];

/** A password in the user-info part, or as a `password` parameter (which pg and ioredis both read). */
function urlHasPassword(value: string): boolean {
  try {
    const url = new URL(value);
    return url.password !== "" || url.searchParams.has("password");
  } catch {
    return false;
  }
}

/**
 * Secrets given as flags: any user of the machine sees a process's arguments (`ps`, /proc/PID/cmdline) while it
 * runs. Each warning names the environment variable to use instead, never the value.
 */
export function secretFlagWarnings(overrides: Overrides): string[] {
  const warnings: string[] = [];
  for (const { name, what, secret } of SECRET_FLAGS) {
    const value = overrides[name];
    if (value === undefined || value.trim() === "" || !secret(value.trim())) continue;
    const { env, flag } = SETTINGS[name];
    warnings.push(
      `--${flag} puts ${what} on the command line, where any user of this machine can read it (ps); set ${env} instead`,
    );
  }
  return warnings;
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");

/** Whether only this machine can reach the listening address (`::ffff:127.0.0.1` counts: BlockList maps it). */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === "localhost") return true;
  const family = isIP(host);
  return family !== 0 && LOOPBACK.check(host, family === 4 ? "ipv4" : "ipv6");
}

/**
 * Serving plain http where other machines reach it sends API keys, agent tokens and session cookies across the
 * network readable. An https public URL says a TLS proxy in front of the relay takes care of that.
 */
export function plainHttpWarning(config: Pick<Config, "host" | "publicUrl">): string | undefined {
  if (isLoopbackHost(config.host) || config.publicUrl?.startsWith("https://")) return undefined;
  return (
    `Serving plain http on ${config.host}, which other machines can reach: API keys, agent tokens and session cookies cross the network unencrypted. ` +
    `Put a TLS-terminating proxy in front and set ${SETTINGS.publicUrl.env} to its https:// address, or listen on 127.0.0.1`
  );
}

/** What `tab-relay doctor` checks a model server with: the upstream settings alone, no data folder or database. */
export interface DoctorConfig {
  upstreamUrl: string;
  upstreamModel: string | undefined;
  upstreamApiKey: string | undefined;
  /** Set by the operator: doctor tries this mode instead of the one it would recommend. */
  upstreamApi: UpstreamApi | undefined;
  /** A family name or a custom template string, as TAB_RELAY_FIM_TEMPLATE takes it. */
  fimTemplate: string | undefined;
  infillMaxPredictMs: number;
  upstreamTimeoutMs: number;
}

export const DOCTOR_SETTINGS = [
  "upstreamUrl",
  "upstreamModel",
  "upstreamApiKey",
  "upstreamApi",
  "fimTemplate",
  "infillMaxPredictMs",
  "upstreamTimeoutMs",
] as const;

/** The upstream settings, read and checked as for `serve` (flags win, every problem reported at once), frozen. */
export function loadDoctorConfig(env: Env, overrides: Overrides = {}): Readonly<DoctorConfig> {
  const raw: Record<string, string> = {};
  for (const name of DOCTOR_SETTINGS) {
    const value = overrides[name] ?? env[SETTINGS[name].env];
    if (value !== undefined && value.trim() !== "") raw[name] = value.trim();
  }
  const problems: string[] = [];
  const parsed = RawConfig.pick({
    upstreamUrl: true,
    upstreamModel: true,
    upstreamApiKey: true,
    upstreamApi: true,
    fimTemplate: true,
    infillMaxPredictMs: true,
    upstreamTimeoutMs: true,
  }).safeParse(raw);
  if (!parsed.success)
    for (const issue of parsed.error.issues)
      problems.push(`${label(String(issue.path[0]) as SettingName)}: ${issue.message}`);
  if (raw["upstreamUrl"] === undefined)
    problems.push(`${label("upstreamUrl")}: is required: the model server to check`);
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  const c = parsed.data;
  const api =
    raw["upstreamApi"] === undefined ? undefined : (DEPRECATED_APIS[c.upstreamApi] ?? (c.upstreamApi as UpstreamApi));
  if (api !== undefined && api !== "fim" && c.fimTemplate !== undefined)
    problems.push(`${label("fimTemplate")}: only applies when ${SETTINGS.upstreamApi.env} is fim (it is ${api})`);
  if (api !== undefined && api !== "infill" && c.infillMaxPredictMs !== undefined)
    problems.push(
      `${label("infillMaxPredictMs")}: only applies when ${SETTINGS.upstreamApi.env} is infill (it is ${api})`,
    );
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    upstreamUrl: c.upstreamUrl as string,
    upstreamModel: c.upstreamModel,
    upstreamApiKey: c.upstreamApiKey,
    upstreamApi: api,
    fimTemplate: c.fimTemplate,
    infillMaxPredictMs: c.infillMaxPredictMs ?? DEFAULT_INFILL_MAX_PREDICT_MS,
    upstreamTimeoutMs: c.upstreamTimeoutMs,
  });
}

/** What `tab-relay doctor` checks a deployment with: the settings `serve` reads for its state, address and webhooks. */
export interface OperatorConfig {
  /** The SQLite data folder; undefined when the database is PostgreSQL. */
  dataDir: string | undefined;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  host: string;
  port: number;
  publicUrl: string | undefined;
  trustProxy: TrustProxy;
  webhookAllowPrivate: boolean;
}

export const OPERATOR_SETTINGS = [
  "dataDir",
  "databaseUrl",
  "redisUrl",
  "host",
  "port",
  "publicUrl",
  "trustProxy",
  "webhookAllowPrivate",
] as const;

/**
 * The deployment's settings, read and checked as for `serve` (flags win, every problem at once), frozen; undefined
 * when neither a data folder nor a database is given, so doctor has no deployment to check.
 */
export function loadOperatorConfig(env: Env, overrides: Overrides = {}): Readonly<OperatorConfig> | undefined {
  const raw: Record<string, string> = {};
  for (const name of OPERATOR_SETTINGS) {
    const value = overrides[name] ?? env[SETTINGS[name].env];
    if (value !== undefined && value.trim() !== "") raw[name] = value.trim();
  }
  if (raw["dataDir"] === undefined && raw["databaseUrl"] === undefined) return undefined;
  const parsed = RawConfig.pick({
    dataDir: true,
    databaseUrl: true,
    redisUrl: true,
    host: true,
    port: true,
    publicUrl: true,
    trustProxy: true,
    webhookAllowPrivate: true,
  }).safeParse(raw);
  if (!parsed.success)
    throw new ConfigError(
      parsed.error.issues.map((issue) => `${label(String(issue.path[0]) as SettingName)}: ${issue.message}`),
    );
  const c = parsed.data;
  return Object.freeze({
    // PostgreSQL wins, as it does for serve.
    dataDir: c.databaseUrl ? undefined : c.dataDir,
    databaseUrl: c.databaseUrl,
    redisUrl: c.redisUrl,
    host: c.host,
    port: c.port,
    publicUrl: c.publicUrl,
    trustProxy: c.trustProxy,
    webhookAllowPrivate: c.webhookAllowPrivate,
  });
}

/**
 * The proxies for model downloads, as curl and undici read them: the lower-case variable wins over the upper-case
 * one; `https_proxy` serves https URLs (else `http_proxy` does), `http_proxy` http URLs, and `no_proxy` lists hosts
 * reached directly. `host:port` without a scheme is an http proxy, as curl takes it (curl(1), --proxy: "If no
 * protocol is specified ... it is treated as an HTTP proxy"). Anything else that is not an http(s) URL is a
 * configuration problem, named.
 */
export function proxyFromEnv(env: Env, problems: string[] = []): Readonly<ProxySettings> {
  const read = (name: string): string | undefined => {
    const given = (env[name.toLowerCase()] ?? env[name])?.trim();
    if (given === undefined || given === "") return undefined;
    const value = given.includes("://") ? given : `http://${given}`;
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
      problems.push(`${name}: must be an http:// or https:// proxy URL`);
      return undefined;
    }
    return value;
  };
  const noProxy = (env["no_proxy"] ?? env["NO_PROXY"])?.trim();
  return Object.freeze({
    httpProxy: read("HTTP_PROXY"),
    httpsProxy: read("HTTPS_PROXY"),
    noProxy: noProxy === "" ? undefined : noProxy,
  });
}

function modelsConfig(
  c: { modelHubUrl?: string | undefined; modelRegistry?: string | undefined },
  proxy: Readonly<ProxySettings>,
  proxyProblems: readonly string[],
): Readonly<ModelsConfig> {
  return Object.freeze({
    hubUrl: c.modelHubUrl ?? DEFAULT_HUB_URL,
    registryFile: c.modelRegistry,
    proxy,
    proxyProblems: Object.freeze([...proxyProblems]),
  });
}

/** What `tab-relay models` reads: the data folder, the hub and registry settings, and the proxies. */
export const MODELS_SETTINGS = ["dataDir", "modelHubUrl", "modelRegistry"] as const;

/** The settings of `tab-relay models`, read and checked as for `serve` (flags win, every problem at once), frozen. */
export function loadModelsConfig(env: Env, overrides: Overrides = {}): Readonly<{ dataDir: string } & ModelsConfig> {
  const raw: Record<string, string> = {};
  for (const name of MODELS_SETTINGS) {
    const value = overrides[name] ?? env[SETTINGS[name].env];
    if (value !== undefined && value.trim() !== "") raw[name] = value.trim();
  }
  const problems: string[] = [];
  const parsed = RawConfig.pick({ dataDir: true, modelHubUrl: true, modelRegistry: true }).safeParse(raw);
  if (!parsed.success)
    for (const issue of parsed.error.issues)
      problems.push(`${label(String(issue.path[0]) as SettingName)}: ${issue.message}`);
  if (raw["dataDir"] === undefined)
    problems.push(`${label("dataDir")}: is required: the data folder that holds models/`);
  const proxy = proxyFromEnv(env, problems);
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({ dataDir: parsed.data.dataDir as string, ...modelsConfig(parsed.data, proxy, []) });
}
