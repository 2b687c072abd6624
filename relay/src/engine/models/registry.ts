import { z } from "zod";
import { FIM_FAMILIES, type FimFamily } from "../../providers/upstream/templates";

/**
 * The models `--model NAME` and `tab-relay models pull NAME` know: where each GGUF file lives on a Hugging Face-style
 * hub, its size and sha256, the FIM family that prompts it, and its licence.
 *
 * How an entry was chosen. Each is a base (not instruct) model, since fill-in-the-middle is what base models are
 * trained for, at Q8_0, the quantisation Tabby's registry and llama.cpp's own presets use for completion models.
 * The file comes from its publisher where the publisher ships a GGUF, else from the source named in `sources`:
 * - Qwen publishes GGUF files of the Instruct models only (its collection lists `Qwen/Qwen2.5-Coder-*-Instruct-GGUF`),
 *   so the base models come from ggml-org, the llama.cpp maintainers' organisation, whose `Qwen2.5-Coder-*-Q8_0-GGUF`
 *   repositories llama.cpp's `--fim-qwen-*` presets load.
 * - We found no GGUF published by BigCode (StarCoder2) or DeepSeek (DeepSeek-Coder); those entries use the files
 *   TabbyML/registry-tabby's models.json names, with its sha256.
 * - Google's own `google/codegemma-2b-GGUF` holds only full-precision files behind a licence gate that needs a
 *   Hugging Face account; the entry uses the Q8_0 file Tabby's registry serves from its own `TabbyML/models`.
 *
 * `verified` means the sha256 was read at a citable source for that very file: the hub's page of the file (its Git
 * LFS pointer) or Tabby's registry. An entry that is not verified downloads only with `--allow-unverified`, and its
 * sha256, where it has one, is still enforced. `bytesExact: false` marks a size known only as the hub's rounded
 * figure; the download then accepts the hub's length within {@link APPROXIMATE_SIZE_TOLERANCE} of it.
 */
export interface ModelEntry {
  /** What people type: `--model qwen2.5-coder-1.5b`. */
  readonly name: string;
  readonly label: string;
  /** The FIM family whose tokens the model was trained with (relay/src/providers/upstream/templates.ts). */
  readonly family: FimFamily;
  readonly license: { readonly name: string; readonly url: string };
  /** `owner/name` on the hub. */
  readonly repo: string;
  /** A commit (pinned) or a branch. */
  readonly revision: string;
  /** The GGUF file's name, which is also its name in the data folder's `models/`. */
  readonly file: string;
  readonly bytes: number;
  readonly bytesExact: boolean;
  /** Lower-case hex. */
  readonly sha256: string;
  readonly verified: boolean;
  /** Where the hash, size and address were read. */
  readonly sources: readonly string[];
  /** What a person choosing the model should know (a licence that restricts use, say). */
  readonly note?: string;
}

/** How far a hub's length may differ from an entry's rounded size (`bytesExact: false`). */
export const APPROXIMATE_SIZE_TOLERANCE = 0.03;

/** Hugging Face; a mirror with the same `/{repo}/resolve/{revision}/{file}` layout replaces it (TAB_RELAY_MODEL_HUB_URL). */
export const DEFAULT_HUB_URL = "https://huggingface.co";

/** No file on any hub is this large; a bigger figure in an operator's registry is a typo. */
const MAX_MODEL_BYTES = 2 ** 50;

const APACHE = { name: "Apache-2.0", url: "https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B/blob/main/LICENSE" };
const QWEN_SOURCE =
  "Qwen/Qwen2.5-Coder-3B README @ 5b748b5: every Qwen2.5-Coder model is Apache-2.0 except the 3B (Qwen Research License)";

export const MODEL_REGISTRY: readonly ModelEntry[] = Object.freeze([
  {
    name: "qwen2.5-coder-0.5b",
    label: "Qwen2.5-Coder 0.5B (base, Q8_0)",
    family: "qwen-coder",
    license: APACHE,
    repo: "ggml-org/Qwen2.5-Coder-0.5B-Q8_0-GGUF",
    revision: "ecdd60b1c25ab158bec6e1ab084aeebf9eae0af4",
    file: "qwen2.5-coder-0.5b-q8_0.gguf",
    bytes: 531_068_128,
    bytesExact: true,
    sha256: "d0f8cd6c49bab52a0abdbe47948518b1f4d9b1a8a2a6825099cea31cea10ac56",
    verified: true,
    sources: [
      "https://huggingface.co/ggml-org/Qwen2.5-Coder-0.5B-Q8_0-GGUF/blob/ecdd60b1c25ab158bec6e1ab084aeebf9eae0af4/qwen2.5-coder-0.5b-q8_0.gguf (Git LFS SHA256)",
      "https://huggingface.co/ggml-org/Qwen2.5-Coder-0.5B-Q8_0-GGUF/blame/ecdd60b1c25ab158bec6e1ab084aeebf9eae0af4/qwen2.5-coder-0.5b-q8_0.gguf (LFS pointer: oid and size 531068128)",
      QWEN_SOURCE,
    ],
  },
  {
    name: "qwen2.5-coder-1.5b",
    label: "Qwen2.5-Coder 1.5B (base, Q8_0)",
    family: "qwen-coder",
    license: APACHE,
    repo: "ggml-org/Qwen2.5-Coder-1.5B-Q8_0-GGUF",
    revision: "8be1b8a895a84beea772817caaa71eba6b6e0d07",
    file: "qwen2.5-coder-1.5b-q8_0.gguf",
    bytes: 1_646_573_056,
    bytesExact: true,
    sha256: "29871c94d15727a6e243f79a37113d4ae625a6215b5e800bf41a23af2da32832",
    verified: true,
    sources: [
      "https://huggingface.co/ggerganov/Qwen2.5-Coder-1.5B-Q8_0-GGUF/blame/main/qwen2.5-coder-1.5b-q8_0.gguf (LFS pointer at 3894e0c: oid and size 1646573056; the repository was later renamed, ggml-org's commit 8be1b8a is 'Change ggerganov -> ggml-org')",
      "https://huggingface.co/ggml-org/Qwen2.5-Coder-1.5B-Q8_0-GGUF/tree/8be1b8a895a84beea772817caaa71eba6b6e0d07 (the file, 1.65 GB, at the pinned revision)",
      QWEN_SOURCE,
    ],
  },
  {
    name: "qwen2.5-coder-3b",
    label: "Qwen2.5-Coder 3B (base, Q8_0)",
    family: "qwen-coder",
    license: { name: "Qwen Research License", url: "https://huggingface.co/Qwen/Qwen2.5-Coder-3B/blob/main/LICENSE" },
    repo: "ggml-org/Qwen2.5-Coder-3B-Q8_0-GGUF",
    revision: "main",
    file: "qwen2.5-coder-3b-q8_0.gguf",
    bytes: 3_285_476_160,
    bytesExact: false,
    sha256: "a522a906e299ed34db738b9626b2cd0da9e446c14674468a22fc2eae3dbd344d",
    verified: true,
    sources: [
      "https://huggingface.co/ggml-org/Qwen2.5-Coder-3B-Q8_0-GGUF/blob/main/qwen2.5-coder-3b-q8_0.gguf (Git LFS SHA256; 3.29 GB, uploaded in 3b5e565)",
      QWEN_SOURCE,
    ],
    note: "Qwen Research License, unlike the other Qwen2.5-Coder sizes: read its terms before commercial use. (Tabby's registry lists it as Apache-2.0; Qwen's model card does not.)",
  },
  {
    name: "qwen2.5-coder-7b",
    label: "Qwen2.5-Coder 7B (base, Q8_0)",
    family: "qwen-coder",
    license: APACHE,
    repo: "ggml-org/Qwen2.5-Coder-7B-Q8_0-GGUF",
    revision: "bca77e0a8c88fc224882bcc404170c3ef17efacc",
    file: "qwen2.5-coder-7b-q8_0.gguf",
    bytes: 8_098_525_600,
    bytesExact: true,
    sha256: "0ef48dc94a3c551a6736ac2601de38413dc9aa9318534b16e8baee08290a4aaf",
    verified: false,
    sources: [
      "https://huggingface.co/ggml-org/Qwen2.5-Coder-7B-Q8_0-GGUF/tree/main (the file, 8.1 GB, head bca77e0)",
      "https://huggingface.co/mav23/Qwen2.5-Coder-7B-GGUF/blame/main/qwen2.5-coder-7b.Q8_0.gguf (LFS pointer of another upload with this oid and size 8098525600)",
      "https://huggingface.co/Jaidchen/Qwen2.5-Coder-7B-Q8_0-GGUF/blob/f9324dd2a59f8b83b57ae3d0ec135f71428b311c/qwen2.5-coder-7b-q8_0.gguf (a gguf-my-repo conversion with the same SHA256)",
      QWEN_SOURCE,
    ],
    note: "Unverified: the sha256 was read from identical conversions on other repositories, not from ggml-org's page for this file.",
  },
  {
    name: "starcoder2-3b",
    label: "StarCoder2 3B (Q8_0)",
    family: "starcoder2",
    license: {
      name: "BigCode-OpenRAIL-M",
      url: "https://huggingface.co/spaces/bigcode/bigcode-model-license-agreement",
    },
    repo: "nold/starcoder2-3b-GGUF",
    revision: "main",
    file: "starcoder2-3b_Q8_0.gguf",
    bytes: 3_220_000_000,
    bytesExact: false,
    sha256: "0499b8d046c56934c9741fd00c6206a5f7ca0eb42b59304ab7f4a20cd2f28ebf",
    verified: true,
    sources: [
      "TabbyML/registry-tabby models.json @ 7a9d54ebee2720c1322cf05b6c8150512f95a029, StarCoder2-3B (URL and sha256)",
      "https://huggingface.co/mradermacher/starcoder2-3b-GGUF/tree/4e26791da74c268e230c320879e70e6bd348af07 and PrunaAI/starcoder2-3b-GGUF-smashed: Q8_0 conversions of the same model at 3.22 GB (the size; nold's own listing was not read)",
    ],
  },
  {
    name: "deepseek-coder-1.3b",
    label: "DeepSeek-Coder 1.3B (base, Q8_0)",
    family: "deepseek-coder",
    license: {
      name: "DeepSeek License",
      url: "https://github.com/deepseek-ai/deepseek-coder/blob/main/LICENSE-MODEL",
    },
    repo: "icycodes/deepseek-coder-1.3b-base-Q8_0-GGUF",
    revision: "01c3e6dacd527cd8db04dbade038d7e7a8839264",
    file: "deepseek-coder-1.3b-base-q8_0.gguf",
    bytes: 1_430_000_000,
    bytesExact: false,
    sha256: "f25baf6ed77e1f651af3b5359fadc4e77656621a7660f36624de70d631d110d2",
    verified: true,
    sources: [
      "TabbyML/registry-tabby models.json @ 7a9d54ebee2720c1322cf05b6c8150512f95a029, DeepSeekCoder-1.3B (URL and sha256)",
      "https://huggingface.co/icycodes/deepseek-coder-1.3b-base-Q8_0-GGUF/tree/01c3e6dacd527cd8db04dbade038d7e7a8839264 (the file, 1.43 GB)",
    ],
  },
  {
    name: "codegemma-2b",
    label: "CodeGemma 2B (Q8_0)",
    family: "codegemma",
    license: { name: "Gemma Terms of Use", url: "https://ai.google.dev/gemma/terms" },
    repo: "TabbyML/models",
    revision: "main",
    file: "codegemma-2b.Q8_0.gguf",
    bytes: 2_670_000_000,
    bytesExact: false,
    sha256: "a5dc633538a2e152d8e9f69766135b4bffcc5611d6dd84200e280419f7dc1eba",
    verified: true,
    sources: [
      "TabbyML/registry-tabby models.json @ 7a9d54ebee2720c1322cf05b6c8150512f95a029, CodeGemma-2B (URL and sha256)",
      "https://huggingface.co/PrunaAI/codegemma-2b-GGUF-smashed/blob/36bdf664cc6b368a968159423b8ee5756bb7fec2/codegemma-2b.Q8_0.gguf and ehrrh/codegemma-2b-Q8_0-GGUF: Q8_0 conversions of the same model at 2.67 GB (the size)",
      "https://huggingface.co/google/codegemma-2b-GGUF/discussions/1 (Google's repository: codegemma-2b.gguf and codegemma-2b-f16.gguf only, gated)",
    ],
  },
] satisfies ModelEntry[]);

const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** One entry, as an operator's registry file (TAB_RELAY_MODEL_REGISTRY) writes it; the built-in ones obey it too. */
export const ModelEntrySchema = z.object({
  name: z.string().regex(NAME, "lower-case letters, digits, '.', '_' and '-', at most 64"),
  label: z.string().min(1).max(200).optional(),
  family: z.enum(FIM_FAMILIES),
  license: z.object({ name: z.string().min(1).max(200), url: z.url({ protocol: /^https?$/ }) }).optional(),
  repo: z.string().regex(/^[A-Za-z0-9][\w.-]{0,95}\/[\w.-]{1,96}$/, "owner/name"),
  revision: z
    .string()
    .regex(/^[\w.-]{1,100}$/, "a commit or a branch name")
    .default("main"),
  // The file name becomes a path in the data folder: no separators, no hidden files, a .gguf ending.
  file: z.string().regex(/^[A-Za-z0-9][\w.-]{0,199}\.gguf$/, "a file name ending in .gguf (no folders)"),
  bytes: z.number().int().positive().max(MAX_MODEL_BYTES),
  bytesExact: z.boolean().default(true),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, "64 lower-case hex digits"),
  verified: z.boolean().default(true),
  sources: z.array(z.string().max(1000)).max(20).default([]),
  note: z.string().max(1000).optional(),
});

export const ModelRegistryFile = z.object({ models: z.array(ModelEntrySchema).min(1).max(200) });

export class RegistryFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RegistryFileError";
  }
}

/**
 * The built-in entries plus an operator's own (parsed from their registry file's JSON text). An operator's entry
 * with a built-in name replaces it; its sha256 is the operator's word, so it counts as verified unless it says not.
 */
export function buildRegistry(extraJson?: string, origin = "the registry file"): readonly ModelEntry[] {
  if (extraJson === undefined) return MODEL_REGISTRY;
  let raw: unknown;
  try {
    raw = JSON.parse(extraJson);
  } catch (error) {
    throw new RegistryFileError(`${origin} is not JSON: ${(error as Error).message}`);
  }
  const parsed = ModelRegistryFile.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RegistryFileError(`${origin}: ${issue ? `${issue.path.join(".")}: ${issue.message}` : "invalid"}`);
  }
  const byName = new Map(MODEL_REGISTRY.map((entry) => [entry.name, entry]));
  const files = new Map(MODEL_REGISTRY.map((entry) => [entry.file, entry.name]));
  for (const entry of parsed.data.models) {
    const owner = files.get(entry.file);
    if (owner !== undefined && owner !== entry.name)
      throw new RegistryFileError(`${origin}: ${entry.name}: file ${entry.file} is already ${owner}'s`);
    files.set(entry.file, entry.name);
    const { note, label, license, ...rest } = entry;
    const made: ModelEntry = {
      ...rest,
      label: label ?? entry.name,
      license: license ?? { name: "unknown", url: "" },
      ...(note === undefined ? {} : { note }),
    };
    byName.set(entry.name, Object.freeze(made));
  }
  return Object.freeze([...byName.values()]);
}

/** Case-insensitive: `Qwen2.5-Coder-1.5B` finds `qwen2.5-coder-1.5b`. */
export function findModel(registry: readonly ModelEntry[], name: string): ModelEntry | undefined {
  const wanted = name.trim().toLowerCase();
  return registry.find((entry) => entry.name === wanted);
}

/** Where the hub (or a mirror with its layout) serves the file: huggingface_hub's `{endpoint}/{repo_id}/resolve/{revision}/{filename}` (src/huggingface_hub/constants.py, HUGGINGFACE_CO_URL_TEMPLATE). */
export function fileUrl(entry: Pick<ModelEntry, "repo" | "revision" | "file">, hubUrl: string): string {
  const base = hubUrl.replace(/\/+$/, "");
  const path = [...entry.repo.split("/"), "resolve", entry.revision, entry.file].map(encodeURIComponent).join("/");
  return `${base}/${path}`;
}
