import { SECRET_PREFIXES, TAB_DEFAULTS, TAB_LIMITS, hasValidChecksum } from "@tab-relay/shared";
import { z } from "zod";

/** The extension's settings (`tabRelay.*`), validated; the pipeline reads nothing else. */
export interface Settings {
  readonly enabled: boolean;
  readonly relayUrl: string;
  readonly workspaceSlug: string;
  readonly model: string;
  /** The shortest wait after a keystroke before asking the relay. */
  readonly debounceMs: number;
  /** Wait longer than `debounceMs` for fast typists, until their usual gap between keystrokes has passed. */
  readonly adaptiveDebounce: boolean;
  readonly requestTimeoutMs: number;
  readonly maxCompletionTokens: number | undefined;
  readonly contextCharsBefore: number;
  readonly contextCharsAfter: number;
  /** The budget of `surrounding_context`: code from the files the user worked in, and this file's far parts. */
  readonly surroundingContextChars: number;
  /** Files never sent, as context or as the document being completed. */
  readonly excludeGlobs: readonly string[];
  /** Language ids to complete in; `*` means all. */
  readonly enabledLanguages: readonly string[];
  /** Language ids never to complete in; wins over `enabledLanguages`. */
  readonly disabledLanguages: readonly string[];
  /** Language id → surface name, merged over DEFAULT_SURFACES. */
  readonly surfaces: Readonly<Record<string, string>>;
  /** Report what became of shown suggestions (sizes and times, no code) to the relay. */
  readonly reportUsage: boolean;
  /** `tabRelay.nextEdits.enabled`: after a pause that follows an edit, ask for the next edit near the cursor. */
  readonly "nextEdits.enabled": boolean;
}

/** Markdown is prose for docs, plain text is notes, the commit box is a message; everything else is code. */
export const DEFAULT_SURFACES: Readonly<Record<string, string>> = {
  markdown: "docs",
  plaintext: "notes",
  scminput: "messages",
  "git-commit": "messages",
};

/**
 * The default budget of `surrounding_context`, sized for a model served with a 4,096-token context, and close to a
 * 2,048-token one:
 * - 6,000 characters are about 1,500 tokens at the 3.95 characters per token that the o200k encoding gives on
 *   this repository's TypeScript, and at most 2,000 at 3 per token, a margin for code models whose vocabularies
 *   are smaller (an estimate, not measured here);
 * - the prefix and suffix windows (600 + 80 characters) add 170 to 230, template and file headers a few dozen;
 * - that is 1,750 to 2,300 tokens of prompt, which leaves a 4k context room for the longest answer the relay
 *   allows (500 tokens, docs/api.md#completions), and a 2k context about 280 tokens of answer at o200k's rate.
 * It also holds what the best-known assistants send: about four 40-line windows (Copilot sends its best four
 * snippets from open tabs) and a recent edit or two.
 */
export const DEFAULT_CONTEXT_BUDGET_CHARS = 6_000;

/** `tabRelay.excludeGlobs` by default: environment files, private keys and certificates, SSH keys. */
export const DEFAULT_EXCLUDE_GLOBS: readonly string[] = Object.freeze([".env*", "*.pem", "*.key", "id_*"]);

export const DEFAULT_SETTINGS: Settings = {
  enabled: true,
  relayUrl: "http://127.0.0.1:8787",
  // The workspace `tab-relay start` creates on a fresh data folder, so a first relay needs no slug set.
  workspaceSlug: "default",
  model: TAB_DEFAULTS.model,
  debounceMs: TAB_DEFAULTS.debounceMs,
  // Off: a fixed 120 ms shows ghost text sooner (docs/benchmarks.md, keystroke to ghost text in a real VS Code).
  adaptiveDebounce: false,
  requestTimeoutMs: 5_000,
  maxCompletionTokens: undefined,
  contextCharsBefore: TAB_DEFAULTS.contextCharsBefore,
  contextCharsAfter: TAB_DEFAULTS.contextCharsAfter,
  surroundingContextChars: DEFAULT_CONTEXT_BUDGET_CHARS,
  excludeGlobs: DEFAULT_EXCLUDE_GLOBS,
  enabledLanguages: ["*"],
  disabledLanguages: [],
  surfaces: {},
  reportUsage: true,
  "nextEdits.enabled": true,
};

const int = (min: number, max: number) => z.number().int().min(min).max(max);

const FIELDS = {
  enabled: z.boolean(),
  relayUrl: z
    .string()
    .trim()
    .refine((value) => value === "" || /^https?:\/\/[^\s]+$/.test(value), "must be an http(s) URL")
    .transform((value) => value.replace(/\/+$/, "")),
  workspaceSlug: z.string().trim().max(128),
  model: z.string().trim().min(1).max(128),
  debounceMs: int(0, 5_000),
  adaptiveDebounce: z.boolean(),
  requestTimeoutMs: int(100, 120_000),
  maxCompletionTokens: int(1, TAB_LIMITS.maxCompletionTokens)
    .nullable()
    .transform((value) => value ?? undefined),
  contextCharsBefore: int(1, TAB_LIMITS.activeTextBeforeCursor),
  contextCharsAfter: int(0, TAB_LIMITS.activeTextAfterCursor),
  surroundingContextChars: int(0, TAB_LIMITS.surroundingContext),
  excludeGlobs: z.array(z.string().trim().min(1).max(1024)).max(1000),
  enabledLanguages: z.array(z.string().min(1)),
  disabledLanguages: z.array(z.string().min(1)),
  surfaces: z.record(z.string().min(1), z.string().trim().min(1).max(64)),
  reportUsage: z.boolean(),
  "nextEdits.enabled": z.boolean(),
} satisfies { [K in keyof Settings]: z.ZodType<Settings[K], unknown> };

/**
 * The `tabRelay.*` key each field is read from. VS Code 1.100.3 titles a contributed setting on the Settings page
 * from its key alone: `settingKeyToDisplayFormat` (src/vs/workbench/contrib/preferences/browser/
 * settingsTreeModels.ts) runs `wordifyKey` (src/vs/workbench/contrib/preferences/common/preferences.ts) on the
 * key's last segment, and a manifest cannot give a setting a title (ISetting.title is internal, set only for
 * extension-toggle rows in settingsEditor2.ts). So "debounceMs" showed as "Debounce Ms", and the keys whose unit
 * was abbreviated now spell it out (issue 24); the fields keep their short names, which only code reads.
 */
export const SETTING_KEYS = {
  enabled: "enabled",
  relayUrl: "relayUrl",
  workspaceSlug: "workspaceSlug",
  model: "model",
  debounceMs: "debounceMilliseconds",
  adaptiveDebounce: "adaptiveDebounce",
  requestTimeoutMs: "requestTimeoutMilliseconds",
  maxCompletionTokens: "maxCompletionTokens",
  contextCharsBefore: "contextCharactersBefore",
  contextCharsAfter: "contextCharactersAfter",
  surroundingContextChars: "surroundingContextCharacters",
  excludeGlobs: "excludeGlobs",
  enabledLanguages: "enabledLanguages",
  disabledLanguages: "disabledLanguages",
  surfaces: "surfaces",
  reportUsage: "reportUsage",
  "nextEdits.enabled": "nextEdits.enabled",
} as const satisfies { readonly [K in keyof Settings]: string };

/**
 * The keys the renamed settings had in 0.1.0, still read so that a settings.json written for it keeps working (see
 * `readSettingValues`). package.json still declares them with a `markdownDeprecationMessage`: VS Code 1.100.3 then
 * warns on them in settings.json with that message instead of fading them as "Unknown Configuration Setting"
 * (preferencesRenderers.ts), and the Settings page lists a deprecated setting only where it is set
 * (`createSettingsTreeGroupElement` in settingsTreeModels.ts).
 */
export const FORMER_SETTING_KEYS = {
  debounceMs: "debounceMs",
  requestTimeoutMs: "requestTimeoutMs",
  contextCharsBefore: "contextCharsBefore",
  contextCharsAfter: "contextCharsAfter",
  surroundingContextChars: "surroundingContextChars",
} as const satisfies { readonly [K in keyof Settings]?: string };

export interface ParsedSettings {
  readonly settings: Settings;
  /** One line per rejected value, e.g. `tabRelay.debounceMilliseconds: Too big: expected number to be <=5000`. */
  readonly problems: readonly string[];
}

/**
 * Validates raw configuration values field by field. A missing value takes its default; an invalid one takes
 * its default too and is reported, by the key it was read from (`keys`, the current keys unless a former one was
 * read), so one typo in settings.json does not switch completions off.
 */
export function parseSettings(
  raw: Readonly<Partial<Record<keyof Settings, unknown>>>,
  keys: Readonly<Record<keyof Settings, string>> = SETTING_KEYS,
): ParsedSettings {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [field, schema] of Object.entries(FIELDS) as [keyof Settings, z.ZodType][]) {
    const value = raw[field];
    if (value === undefined) {
      out[field] = DEFAULT_SETTINGS[field];
      continue;
    }
    const parsed = schema.safeParse(value);
    if (parsed.success) out[field] = parsed.data;
    else {
      out[field] = DEFAULT_SETTINGS[field];
      problems.push(`tabRelay.${keys[field]}: ${parsed.error.issues[0]?.message ?? "invalid"}`);
    }
  }
  return { settings: Object.freeze(out) as unknown as Settings, problems };
}

/**
 * What VS Code's `WorkspaceConfiguration.inspect(key)` tells apart: the value at each level a person can set. The
 * default (`defaultValue`) is left out on purpose: it is there whether or not anyone set the key.
 */
export interface SettingInspection {
  readonly globalValue?: unknown;
  readonly workspaceValue?: unknown;
  readonly workspaceFolderValue?: unknown;
  readonly globalLanguageValue?: unknown;
  readonly workspaceLanguageValue?: unknown;
  readonly workspaceFolderLanguageValue?: unknown;
}

/** The two calls of `vscode.WorkspaceConfiguration` (for the `tabRelay` section) the settings are read with. */
export interface ConfigurationSource {
  get(key: string): unknown;
  inspect(key: string): SettingInspection | undefined;
}

/** Whether a person set the key at some level (user, workspace, folder, or one of those for a language). */
export function isSetAnywhere(inspection: SettingInspection | undefined): boolean {
  if (inspection === undefined) return false;
  return (
    inspection.globalValue !== undefined ||
    inspection.workspaceValue !== undefined ||
    inspection.workspaceFolderValue !== undefined ||
    inspection.globalLanguageValue !== undefined ||
    inspection.workspaceLanguageValue !== undefined ||
    inspection.workspaceFolderLanguageValue !== undefined
  );
}

/** The raw value of every field, for `parseSettings`, and the key each was read from, for its problems. */
export interface SettingValues {
  readonly raw: Readonly<Record<keyof Settings, unknown>>;
  readonly keys: Readonly<Record<keyof Settings, string>>;
}

/**
 * Reads every field from its key. A renamed field reads its former key only when its current key is set nowhere
 * and the former one is set somewhere: then an old settings.json (`"tabRelay.debounceMs": 300`) still takes
 * effect, and once the new key is set, at any level, it wins over the old one at every level, so a person who
 * moved to the new key never sees a forgotten old value come back.
 */
export function readSettingValues(config: ConfigurationSource): SettingValues {
  const raw: Partial<Record<keyof Settings, unknown>> = {};
  const keys: Partial<Record<keyof Settings, string>> = {};
  for (const [field, key] of Object.entries(SETTING_KEYS) as [keyof Settings, string][]) {
    const former: string | undefined = (FORMER_SETTING_KEYS as Partial<Record<keyof Settings, string>>)[field];
    const read =
      former !== undefined && !isSetAnywhere(config.inspect(key)) && isSetAnywhere(config.inspect(former))
        ? former
        : key;
    raw[field] = config.get(read);
    keys[field] = read;
  }
  return { raw: raw as Record<keyof Settings, unknown>, keys: keys as Record<keyof Settings, string> };
}

/** What still has to be set before a request can be made, as setting names people can look up. */
export function missingConfiguration(settings: Settings, hasApiKey: boolean): string[] {
  const missing: string[] = [];
  if (settings.relayUrl === "") missing.push("tabRelay.relayUrl");
  if (settings.workspaceSlug === "") missing.push("tabRelay.workspaceSlug");
  if (!hasApiKey) missing.push("API key");
  return missing;
}

export function isLanguageEnabled(settings: Settings, languageId: string): boolean {
  if (settings.disabledLanguages.includes(languageId)) return false;
  return settings.enabledLanguages.includes("*") || settings.enabledLanguages.includes(languageId);
}

/**
 * Why a pasted value cannot be a tab-relay API key, or undefined when it can: the prefix, then the length and
 * alphabet, then the CRC-32 checksum its last 6 characters carry (shared/src/secrets.ts), which catches a key cut
 * short or mistyped before it is stored.
 */
export function apiKeyFormatProblem(value: string): string | undefined {
  const key = value.trim();
  if (key === "") return undefined;
  if (!key.startsWith(SECRET_PREFIXES.apiKey))
    return `Not a tab-relay API key: keys start with ${SECRET_PREFIXES.apiKey}. Paste the whole key again.`;
  if (!hasValidChecksum(key, SECRET_PREFIXES.apiKey))
    return "This key's checksum does not match: it was cut short or mistyped. Paste the whole key again.";
  return undefined;
}
