import type { WallClock } from "../clock";
import { field } from "../providers/upstream/json";
import { type ProbeClient, ProbeFailure } from "./http";
import {
  type LlamaCppProps,
  type ListedModel,
  type PickedModel,
  SERVER_NAMES,
  type ServerKind,
  isLlamaCppLoading,
  kindFromHost,
  pickModel,
  readLlamaCppProps,
  readModelList,
  readOllamaCapabilities,
  readOllamaVersion,
  readTgiInfo,
  serverUrls,
} from "./identify";

/** One probe as the report shows it: what was asked, what came back, how long it took, and what it told. */
export interface ProbeLine {
  method: "GET" | "POST";
  url: string;
  status?: number;
  ms: number;
  /** No HTTP answer: why. */
  error?: string;
  /** What the answer told, in a few words. */
  told: string;
}

export interface Survey {
  given: string;
  root: string;
  /** The OpenAI base the relay should use (`…/v1`, or the URL as given when only it answered). */
  base: string;
  baseNote: string;
  probes: ProbeLine[];
  /** Whether anything answered over HTTP. */
  reachable: boolean;
  kind?: ServerKind;
  evidence?: string;
  version?: string;
  models: ListedModel[];
  model?: PickedModel;
  props?: LlamaCppProps;
  /** llama.cpp is still loading its model. */
  loading?: boolean;
  /** llama.cpp: the model has FIM tokens (/infill answered 200) or not (501). */
  infill?: boolean;
  /** Ollama: the model's capabilities include `insert`. */
  insert?: boolean;
  /** Mistral: the model's `capabilities.completion_fim`. */
  modelFim?: boolean;
  /** TGI: the one model it serves (/info `model_id`), whatever name a request gives. */
  servedModel?: string;
  /** Some probe was refused for want of an API key (401, 403). */
  authRefused?: boolean;
}

export interface SurveyOptions {
  url: string;
  model?: string | undefined;
  apiKey?: string | undefined;
  /** Each probe's limit; probes are small, so a server that takes long to answer one is reported, not waited for. */
  timeoutMs: number;
}

export interface SurveyDeps {
  probe: ProbeClient;
  clock: WallClock;
  /** Called with each probe as it finishes, for the progress lines. */
  progress?: (line: ProbeLine) => void;
}

interface Answer {
  status?: number;
  json?: unknown;
  text: string;
  line: ProbeLine;
}

/**
 * Finds out what serves `url`, asking in an order that tells the servers apart with as few requests as possible:
 * `GET /v1/models` (every OpenAI-compatible server; vLLM, llama.cpp and Mistral name themselves in `owned_by`),
 * then, while the kind is still unknown, llama.cpp's `GET /props`, Ollama's `GET /api/version` and TGI's
 * `GET /info` on the server root. Then what the mode depends on: for llama.cpp, `GET /health` (is the model
 * loaded?) and whether `/infill` works with the model (it has FIM tokens); for Ollama, the model's
 * capabilities from `POST /api/show`. Nothing here generates text.
 */
export async function surveyServer(options: SurveyOptions, deps: SurveyDeps): Promise<Survey> {
  const urls = serverUrls(options.url);
  const headers: Record<string, string> = { accept: "application/json" };
  if (options.apiKey) headers["authorization"] = `Bearer ${options.apiKey}`;
  const survey: Survey = {
    given: urls.given,
    root: urls.root,
    base: urls.bases[0] as string,
    baseNote: "",
    probes: [],
    reachable: false,
    models: [],
  };

  const ask = async (method: "GET" | "POST", url: string, body?: unknown): Promise<Answer> => {
    const started = deps.clock.now();
    const line: ProbeLine = { method, url, ms: 0, told: "" };
    try {
      const response = await deps.probe({
        method,
        url,
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        timeoutMs: options.timeoutMs,
      });
      line.status = response.status;
      line.ms = Math.round(deps.clock.now() - started);
      survey.reachable = true;
      if (response.status === 401 || response.status === 403) survey.authRefused = true;
      let json: unknown;
      try {
        json = JSON.parse(response.text);
      } catch {
        json = undefined;
      }
      return { status: response.status, json, text: response.text, line };
    } catch (error) {
      line.ms = Math.round(deps.clock.now() - started);
      line.error =
        error instanceof ProbeFailure ? error.reason : error instanceof Error ? error.message : String(error);
      return { text: "", line };
    }
  };
  const report = (answer: Answer, told: string) => {
    answer.line.told = told;
    survey.probes.push(answer.line);
    deps.progress?.(answer.line);
  };
  const identified = (kind: ServerKind, evidence: string) => {
    survey.kind = kind;
    survey.evidence = evidence;
  };

  // 1. The OpenAI model list, at `/v1` first when the URL has none.
  for (const [index, base] of urls.bases.entries()) {
    const answer = await ask("GET", `${base}/models`);
    const list = answer.status === 200 ? readModelList(answer.json) : undefined;
    if (list) {
      survey.base = base;
      survey.models = list.models;
      if (list.kind) identified(list.kind, list.evidence ?? "");
      report(answer, `${describeModels(list.models)}${list.kind ? ` (${list.evidence})` : ""}`);
      break;
    }
    report(answer, told(answer));
    if (answer.status === undefined) {
      survey.baseNote = "nothing answered";
      return survey;
    }
    if (isLlamaCppLoading(answer.status, answer.json)) {
      identified("llama.cpp", "llama.cpp's 503 unavailable_error while it loads the model");
      survey.loading = true;
    }
    // A refusal or a loading server answered where the routes are; another base would not say more.
    if (answer.status === 401 || answer.status === 403 || survey.loading || index === urls.bases.length - 1) break;
  }
  survey.baseNote =
    survey.base === urls.given
      ? urls.bases.length === 1
        ? "as given"
        : "as given; it serves no /v1/models, so no /v1 was added"
      : "the URL given plus /v1";
  if (survey.kind === undefined) {
    const host = kindFromHost(urls.given);
    if (host) identified(host, "the host name");
  }

  // 2. Routes only one kind of server has, on the root, while the kind is unknown (llama.cpp's /props also after).
  if (!survey.loading && (survey.kind === undefined || survey.kind === "llama.cpp")) {
    const answer = await ask("GET", `${urls.root}/props`);
    const props = answer.status === 200 ? readLlamaCppProps(answer.json) : undefined;
    if (props) {
      survey.props = props;
      if (survey.kind === undefined) identified("llama.cpp", "its GET /props");
      report(answer, describeProps(props));
    } else {
      report(answer, told(answer));
    }
  }
  if (survey.kind === undefined) {
    const answer = await ask("GET", `${urls.root}/api/version`);
    const version = answer.status === 200 ? readOllamaVersion(answer.json) : undefined;
    if (version !== undefined) {
      identified("ollama", "its GET /api/version");
      survey.version = version;
    }
    report(answer, version !== undefined ? `Ollama ${version}` : told(answer));
  }
  if (survey.kind === undefined) {
    const answer = await ask("GET", `${urls.root}/info`);
    const info = answer.status === 200 ? readTgiInfo(answer.json) : undefined;
    if (info) {
      identified("tgi", "its GET /info");
      survey.servedModel = info.modelId;
      if (info.version !== undefined) survey.version = info.version;
      if (survey.models.length === 0) survey.models = [{ id: info.modelId }];
    }
    report(answer, info ? `TGI${info.version ? ` ${info.version}` : ""} serving ${info.modelId}` : told(answer));
  }
  if (survey.kind === undefined && survey.models.length > 0) identified("openai-compatible", "its model list");

  // 3. The model, and what the mode depends on.
  const model = pickModel(survey.models, options.model);
  // TGI's `model` field is unused (router/src/lib.rs: "UNUSED"): any name reaches its one model.
  if (model && survey.kind === "tgi" && survey.servedModel !== undefined && model.id !== survey.servedModel) {
    model.why = `as given; TGI serves ${survey.servedModel} under any name`;
  }
  if (model) survey.model = model;
  if (survey.kind === "llama.cpp") {
    const health = await ask("GET", `${urls.root}/health`);
    if (health.status !== undefined && isLlamaCppLoading(health.status, health.json)) survey.loading = true;
    report(health, health.status === 200 ? "ready" : survey.loading ? "still loading the model" : told(health));
    if (!survey.loading) {
      // llama.vscode's cache-warming request (n_predict 0, model-servers.md §7.7): the model evaluates the
      // prompt and writes nothing. A model without FIM tokens answers 501 before the body is read (§2.1).
      const infill = await ask("POST", `${urls.root}/infill`, {
        input_prefix: "",
        input_suffix: "",
        n_predict: 0,
        cache_prompt: false,
        stream: false,
      });
      if (infill.status === 200) survey.infill = true;
      if (infill.status === 501) survey.infill = false;
      report(
        infill,
        infill.status === 200
          ? "the model has FIM tokens"
          : infill.status === 501
            ? `the model has no FIM tokens (${errorMessage(infill)})`
            : told(infill),
      );
    }
  }
  if (survey.kind === "ollama" && model) {
    const show = await ask("POST", `${urls.root}/api/show`, { model: model.id });
    const capabilities = show.status === 200 ? readOllamaCapabilities(show.json) : undefined;
    if (capabilities) survey.insert = capabilities.includes("insert");
    report(show, capabilities ? `${model.id}: capabilities ${capabilities.join(", ") || "none"}` : told(show));
  }
  if (survey.kind === "mistral" && model) {
    const fim = survey.models.find((listed) => listed.id === model.id)?.fim;
    if (fim !== undefined) survey.modelFim = fim;
  }
  return survey;
}

export function describeServer(survey: Survey): string {
  if (survey.kind === undefined)
    return "not recognised: none of the routes that tell model servers apart answered as one";
  return `${SERVER_NAMES[survey.kind]}${survey.version ? ` ${survey.version}` : ""}, known by ${survey.evidence}`;
}

function describeModels(models: readonly ListedModel[]): string {
  if (models.length === 0) return "no models";
  const names = models.slice(0, 3).map((model) => model.id);
  return `${models.length} model${models.length === 1 ? "" : "s"}: ${names.join(", ")}${models.length > 3 ? ", …" : ""}`;
}

function describeProps(props: LlamaCppProps): string {
  const parts = [`model ${props.modelPath ?? "(unnamed)"}`];
  if (props.contextSize !== undefined) parts.push(`n_ctx ${props.contextSize}`);
  if (props.build !== undefined) parts.push(`build ${props.build}`);
  return `llama.cpp: ${parts.join(", ")}`;
}

/** What an answer that told nothing particular says: no answer, no route, a refusal, or the server's message. */
function told(answer: Answer): string {
  if (answer.status === undefined) return answer.line.error ?? "unknown error";
  if (answer.status === 401 || answer.status === 403)
    return `refused: ${errorMessage(answer) || `HTTP ${answer.status}`}`;
  if (answer.status === 404 || answer.status === 405) return "no such route";
  if (answer.status >= 200 && answer.status < 300) return "not what this server kind answers";
  return errorMessage(answer) || `HTTP ${answer.status}`;
}

const MESSAGE_MAX_CHARS = 160;

/** The message of an error body in the shapes the servers use, else the start of the body, on one line. */
function errorMessage(answer: Answer): string {
  const error = field(answer.json, "error");
  const candidates = [field(error, "message"), error, field(answer.json, "message"), field(answer.json, "detail")];
  const message = candidates.find((value): value is string => typeof value === "string") ?? answer.text;
  const line = message.replace(/\s+/g, " ").trim();
  return line.length > MESSAGE_MAX_CHARS ? `${line.slice(0, MESSAGE_MAX_CHARS)}…` : line;
}
