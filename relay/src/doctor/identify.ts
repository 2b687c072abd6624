import type { UpstreamApi } from "../providers/upstream/api";
import { field } from "../providers/upstream/json";
import { FIM_FAMILIES, type FimFamily, familyForModel } from "../providers/upstream/templates";

/**
 * What `tab-relay doctor` reads from a model server's answers, and what it concludes: pure functions over parsed
 * JSON, so every rule is unit-tested without a server. The shapes are those of notes-internal/model-servers.md,
 * each cited where it is used.
 */

export type ServerKind = "vllm" | "llama.cpp" | "ollama" | "tgi" | "mistral" | "openai-compatible";

export const SERVER_NAMES: Readonly<Record<ServerKind, string>> = {
  vllm: "vLLM",
  "llama.cpp": "llama.cpp (llama-server)",
  ollama: "Ollama",
  tgi: "Hugging Face TGI",
  mistral: "Mistral's API",
  "openai-compatible": "an OpenAI-compatible server of a kind doctor does not recognise",
};

export interface ListedModel {
  id: string;
  ownedBy?: string;
  /** Mistral's `capabilities.completion_fim`: whether /v1/fim/completions takes the model. */
  fim?: boolean;
}

export interface ModelList {
  models: ListedModel[];
  /** The server kind, when an `owned_by` gives it away. */
  kind?: ServerKind;
  evidence?: string;
}

/**
 * `owned_by` values that name the server: vLLM's ModelCard `owned_by: "vllm"` (vllm entrypoints/…/protocol.py,
 * model-servers.md §1.6), llama.cpp's `"llamacpp"` (tools/server/server.cpp @ aa6192d3, §2.5) and Mistral's
 * default `"mistralai"` (mistralai/client-python src/mistralai/client/models/basemodelcard.py @ 05629d23). Ollama's
 * (the namespace, e.g. "library") and TGI's (the model id, router/src/server.rs @ db931fcf openai_get_model_info)
 * say nothing about the server, so those two are told by their own routes.
 */
const OWNERS: Readonly<Record<string, ServerKind>> = { vllm: "vllm", llamacpp: "llama.cpp", mistralai: "mistral" };

/** An OpenAI model list (`{"object":"list","data":[…]}`), or undefined for anything else. */
export function readModelList(json: unknown): ModelList | undefined {
  const data = field(json, "data");
  // Ollama encodes an empty list as null (a nil slice; openai.ToListCompletion, model-servers.md §3.4).
  if (!(Array.isArray(data) || (data === null && field(json, "object") === "list"))) return undefined;
  const models: ListedModel[] = [];
  for (const card of data ?? []) {
    const id = field(card, "id");
    if (typeof id !== "string" || id === "") continue;
    const ownedBy = field(card, "owned_by");
    const fim = field(field(card, "capabilities"), "completion_fim");
    models.push({
      id,
      ...(typeof ownedBy === "string" ? { ownedBy } : {}),
      ...(typeof fim === "boolean" ? { fim } : {}),
    });
  }
  const owner = models
    .map((model) => model.ownedBy)
    .find((owner) => owner !== undefined && OWNERS[owner] !== undefined);
  if (owner === undefined) return { models };
  return { models, kind: OWNERS[owner] as ServerKind, evidence: `owned_by "${owner}" in its model list` };
}

export interface LlamaCppProps {
  modelPath?: string;
  contextSize?: number;
  build?: string;
}

/**
 * llama.cpp's `GET /props`: `default_generation_settings` (holding `n_ctx`), `model_path`, `build_info`
 * (tools/server/README.md @ 25d5b0c5, server-context.cpp @ fb402660 get_props; model-servers.md §2.5). It does not
 * say whether the model has FIM tokens; the /infill probe does.
 */
export function readLlamaCppProps(json: unknown): LlamaCppProps | undefined {
  const settings = field(json, "default_generation_settings");
  if (typeof settings !== "object" || settings === null) return undefined;
  const modelPath = field(json, "model_path");
  const contextSize = field(settings, "n_ctx");
  const build = field(json, "build_info");
  return {
    ...(typeof modelPath === "string" ? { modelPath } : {}),
    ...(typeof contextSize === "number" ? { contextSize } : {}),
    ...(typeof build === "string" ? { build } : {}),
  };
}

/** Ollama's `GET /api/version`: exactly `{"version": "0.x.y"}` (server/routes.go, `gin.H{"version": version.Version}`). */
export function readOllamaVersion(json: unknown): string | undefined {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined;
  const keys = Object.keys(json);
  const version = field(json, "version");
  return keys.length === 1 && typeof version === "string" ? version : undefined;
}

export interface TgiInfo {
  modelId: string;
  version?: string;
}

/**
 * TGI's `GET /info`: the router's Info struct, `model_id`, `max_stop_sequences`, …, `router:
 * "text-generation-router"`, `version` (router/src/lib.rs and server.rs get_model_info @ db931fcf).
 */
export function readTgiInfo(json: unknown): TgiInfo | undefined {
  const modelId = field(json, "model_id");
  if (typeof modelId !== "string") return undefined;
  if (field(json, "router") !== "text-generation-router" && typeof field(json, "max_stop_sequences") !== "number")
    return undefined;
  const version = field(json, "version");
  return { modelId, ...(typeof version === "string" ? { version } : {}) };
}

/** llama.cpp while it loads the model: 503 `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}` (README, §2.5). */
export function isLlamaCppLoading(status: number, json: unknown): boolean {
  return status === 503 && field(field(json, "error"), "type") === "unavailable_error";
}

/** Ollama's `POST /api/show` `capabilities`: `insert` iff the model's template uses .Suffix (server/images.go goTemplateCapabilities). */
export function readOllamaCapabilities(json: unknown): string[] | undefined {
  const capabilities = field(json, "capabilities");
  return Array.isArray(capabilities)
    ? capabilities.filter((item): item is string => typeof item === "string")
    : undefined;
}

/** Mistral's API answers at these hosts (docs.mistral.ai/capabilities/code_generation; model-servers.md §4). */
export function kindFromHost(url: string): ServerKind | undefined {
  const host = new URL(url).hostname.toLowerCase();
  return host === "mistral.ai" || host.endsWith(".mistral.ai") ? "mistral" : undefined;
}

export interface ServerUrls {
  /** The URL as given, without a trailing slash, query or fragment. */
  given: string;
  /** The server root, where llama.cpp's /props, /health and /infill, Ollama's /api/* and TGI's /info live. */
  root: string;
  /** Where the OpenAI routes may be, most likely first. */
  bases: string[];
}

/** The URL with or without `/v1`: with it, the root is the URL without it; without it, `/v1` is tried first. */
export function serverUrls(url: string): ServerUrls {
  const parsed = new URL(url);
  parsed.search = "";
  parsed.hash = "";
  parsed.pathname = parsed.pathname.replace(/\/+$/, "");
  const given = parsed.toString().replace(/\/+$/, "");
  if (/\/v1$/.test(parsed.pathname)) {
    parsed.pathname = parsed.pathname.replace(/\/v1$/, "");
    return { given, root: parsed.toString().replace(/\/+$/, ""), bases: [given] };
  }
  return { given, root: given, bases: [`${given}/v1`, given] };
}

export interface PickedModel {
  id: string;
  /** How it was chosen, for the report. */
  why: string;
  /** Whether the server lists it (undefined when it listed nothing). */
  listed?: boolean;
}

/** Ollama takes a name without a tag as `:latest` (ParseName's default tag). */
function sameModel(listed: string, given: string): boolean {
  return listed === given || listed === `${given}:latest`;
}

/** --upstream-model, else the only model listed, else the first Mistral marks as taking FIM, else the first listed. */
export function pickModel(models: readonly ListedModel[], given: string | undefined): PickedModel | undefined {
  if (given !== undefined) {
    if (models.length === 0) return { id: given, why: "as given" };
    const listed = models.some((model) => sameModel(model.id, given));
    return {
      id: given,
      why: listed ? "as given; the server lists it" : "as given; the server does not list it",
      listed,
    };
  }
  const [first] = models;
  if (first === undefined) return undefined;
  if (models.length === 1) return { id: first.id, why: "the only model the server lists", listed: true };
  const fim = models.find((model) => model.fim === true);
  if (fim)
    return {
      id: fim.id,
      why: `the first of the ${models.length} listed that takes FIM (capabilities.completion_fim); choose another with --upstream-model`,
      listed: true,
    };
  return {
    id: first.id,
    why: `the first of the ${models.length} listed; choose another with --upstream-model`,
    listed: true,
  };
}

/**
 * Whether a model name reads like an instruction-tuned (chat) model: "Instruct", or a `chat` or `it` name part
 * (`deepseek-chat`, `codegemma-7b-it`). A guess from the name, said as one in the report.
 */
export function looksLikeInstruct(model: string): boolean {
  const name = model.toLowerCase();
  return name.includes("instruct") || /(^|[^a-z])(chat|it)($|[^a-z])/.test(name);
}

/** Whether a name reads like a code model whose FIM template doctor cannot tell. */
function looksLikeCode(model: string): boolean {
  return /cod(e|er|ing)|starcoder|fim/.test(model.toLowerCase());
}

/** What doctor learnt about the server and its model, as far as the mode depends on it. */
export interface ServerFacts {
  kind: ServerKind | undefined;
  model: string;
  /** llama.cpp: the /infill probe answered 200 (the model has FIM tokens) or 501 (it has none). */
  infill?: boolean;
  /** Ollama: the model's capabilities include `insert`. */
  insert?: boolean;
  /** Mistral: the model's `capabilities.completion_fim`. */
  modelFim?: boolean;
}

export interface Recommendation {
  api: UpstreamApi;
  /** For `fim`: the family the model name picks; undefined when it picks none (see `advice`). */
  fimTemplate?: FimFamily;
  reason: string;
  /** What the operator must decide before the relay can use this mode (a template no name rule gives). */
  advice?: string;
}

export const TEMPLATE_ADVICE =
  `set TAB_RELAY_FIM_TEMPLATE to the model's family, one of ${FIM_FAMILIES.join(", ")}, or to a custom template holding {prefix}, {suffix} and {context} ` +
  "(e.g. '<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>'), and run doctor again with --fim-template";

/** The mode the relay should use with this server and model, and why. */
export function recommend(facts: ServerFacts): Recommendation {
  const { kind, model } = facts;
  const family = familyForModel(model);
  const instruct = looksLikeInstruct(model);
  if (kind === "llama.cpp" && facts.infill === true) {
    return {
      api: "infill",
      reason:
        "llama.cpp has /infill and the model has FIM tokens: the server writes the model's own FIM prompt, with the context from other files as input_extra",
    };
  }
  if (kind === "llama.cpp" && facts.infill === false) {
    return family !== undefined && !instruct
      ? {
          api: "fim",
          fimTemplate: family,
          reason: `llama.cpp finds no FIM tokens in the model, but its name picks the ${family} template, which the relay writes into /v1/completions`,
        }
      : {
          api: "chat",
          reason:
            "llama.cpp finds no FIM tokens in the model, so it cannot fill in the middle; the chat mode asks an instruction model instead",
        };
  }
  if (kind === "ollama") {
    if (facts.insert === true)
      return {
        api: "suffix",
        reason:
          "Ollama takes prompt + suffix and applies the model's own FIM template (its capabilities include insert)",
      };
    if (facts.insert === false)
      return {
        api: "chat",
        reason:
          "the model's Ollama template takes no suffix (no insert capability), so it cannot fill in the middle; the chat mode asks an instruction model instead",
      };
    return instruct
      ? {
          api: "chat",
          reason: "the name reads like an instruction (chat) model, which the chat mode asks to fill the gap",
        }
      : { api: "suffix", reason: "Ollama takes prompt + suffix and applies the model's own FIM template" };
  }
  if (kind === "mistral") {
    return facts.modelFim === true || (facts.modelFim === undefined && model.toLowerCase().includes("codestral"))
      ? {
          api: "mistral-fim",
          reason:
            "Mistral's API fills in the middle on /v1/fim/completions with Codestral, writing the template itself",
        }
      : {
          api: "chat",
          reason: "Mistral's /v1/fim/completions takes Codestral models only; the chat mode asks this one instead",
        };
  }
  const server = {
    tgi: "TGI refuses suffix (422)",
    vllm: "vLLM refuses suffix (400)",
    "llama.cpp": "llama.cpp's /v1/completions does not take suffix",
    "openai-compatible": "the server is not known to take suffix",
    none: "the server is not known to take suffix",
  }[kind ?? "none"];
  if (instruct)
    return {
      api: "chat",
      reason: "the name reads like an instruction (chat) model, which the chat mode asks to fill the gap",
    };
  if (family !== undefined)
    return {
      api: "fim",
      fimTemplate: family,
      reason: `${server}, so the relay writes the model's own FIM prompt; the name picks the ${family} template`,
    };
  if (looksLikeCode(model))
    return {
      api: "fim",
      reason: `${server}, so the relay writes the model's FIM prompt, but the name matches no template family`,
      advice: TEMPLATE_ADVICE,
    };
  return {
    api: "chat",
    reason:
      "the name matches no FIM template family and does not read like a code model; chat works with any instruction model (for a base code model, use fim with TAB_RELAY_FIM_TEMPLATE)",
  };
}

/** A value as a POSIX shell word: bare when safe, else single-quoted. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

export interface EnvSettings {
  url: string;
  model: string;
  api: UpstreamApi;
  fimTemplate?: string | undefined;
  infillMaxPredictMs?: number | undefined;
}

/** The environment lines for `tab-relay serve`, in the order the README lists the settings. */
export function envLines(settings: EnvSettings): string[] {
  const lines = [
    `TAB_RELAY_UPSTREAM_URL=${shellWord(settings.url)}`,
    `TAB_RELAY_UPSTREAM_MODEL=${shellWord(settings.model)}`,
    `TAB_RELAY_UPSTREAM_API=${settings.api}`,
  ];
  if (settings.api === "fim" && settings.fimTemplate !== undefined)
    lines.push(`TAB_RELAY_FIM_TEMPLATE=${shellWord(settings.fimTemplate)}`);
  if (settings.api === "infill" && settings.infillMaxPredictMs !== undefined)
    lines.push(`TAB_RELAY_INFILL_MAX_PREDICT_MS=${settings.infillMaxPredictMs}`);
  return lines;
}
