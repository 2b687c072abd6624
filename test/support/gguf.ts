/**
 * Writes GGUF v3 files of a llama-architecture model at test time, since no weights can be downloaded here: real
 * tensor names and shapes, seeded random weights and a byte-level BPE vocabulary with the FIM control tokens.
 *
 * The layout follows ggml's own description (ggml-org/ggml docs/gguf.md): the magic `GGUF`, version 3, the tensor
 * count and key-value count (u64), the key-values, the tensor infos (name, dimensions innermost first, type, offset
 * from the data start), then the data, each tensor aligned to `general.alignment` (32). Q8_0 is, per 32 values, one
 * f16 scale and 32 int8s (ggml-common.h `block_q8_0`). The FIM keys are the ones llama.cpp's llama-vocab.cpp reads
 * (`tokenizer.ggml.fim_pre_token_id` …), as node-llama-cpp 3.21.1's GgufMetadataTypes lists them.
 *
 * Random weights pick any token; to keep the text printable (and long enough to test), one hidden dimension is made
 * to dominate the residual stream, and the output row of each token carries a large positive (wanted) or negative
 * (unwanted) weight on that dimension. `favour: "<|endoftext|>"` (or another control token) makes that token the
 * likeliest instead.
 */
import { closeSync, openSync, writeSync } from "node:fs";
import { seededRandom } from "./seededRandom";

export interface GgufModelOptions {
  seed?: number;
  embedding?: number;
  layers?: number;
  heads?: number;
  kvHeads?: number;
  feedForward?: number;
  contextLength?: number;
  /** Total vocabulary; filler tokens pad it past the bytes, merges and specials. */
  vocabSize?: number;
  /** Q8_0 for the big matrices (the realistic benchmark shape), else F32. */
  quantized?: boolean;
  /** Leave out the FIM tokens and keys: a model that cannot fill in the middle. */
  withoutFim?: boolean;
  /**
   * More control tokens, after the specials, and no FIM keys for them: FIM markers under names llama.cpp does not
   * recognise (with `withoutFim`, a model only a configured template can fill in the middle with).
   */
  controlTokens?: readonly string[];
  /** Which tokens the weights favour: printable text (default), or one control token (end-of-text, say) at once. */
  favour?: "text" | (typeof SPECIAL_TOKENS)[number];
  /** Make newlines as unlikely as control tokens: one long line, which no postprocessing rule ends early. */
  oneLine?: boolean;
}

/** Qwen2.5-Coder-0.5B's shape (its config.json): the compute a real keystroke costs, with random weights. */
export const QWEN_CODER_05B_SHAPE: GgufModelOptions = {
  embedding: 896,
  layers: 24,
  heads: 14,
  kvHeads: 2,
  feedForward: 4864,
  contextLength: 4096,
  vocabSize: 151_936,
  quantized: true,
};

/** The control tokens, in vocabulary order after the bytes and merges. */
export const SPECIAL_TOKENS = [
  "<|endoftext|>",
  "<|fim_prefix|>",
  "<|fim_middle|>",
  "<|fim_suffix|>",
  "<|fim_pad|>",
  "<|repo_name|>",
  "<|file_sep|>",
] as const;

/** Merges over GPT-2's byte alphabet (`Ġ` is a space), so common code text becomes fewer tokens. */
const MERGES: readonly [string, string][] = [
  ["Ġ", "Ġ"],
  ["ĠĠ", "ĠĠ"],
  ["r", "e"],
  ["i", "n"],
  ["o", "n"],
  ["s", "t"],
  ["e", "t"],
  ["u", "r"],
  ["Ġ", "re"],
  ["re", "t"],
  ["ret", "ur"],
  ["retur", "n"],
  ["Ġ", "f"],
  ["c", "o"],
  ["co", "n"],
  ["con", "st"],
];

enum ValueType {
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
}
enum TensorType {
  F32 = 0,
  Q8_0 = 8,
}
const ALIGNMENT = 32;

/** GPT-2's bytes_to_unicode: each byte as the printable character its BPE vocabulary spells it with. */
export function byteToUnicode(): string[] {
  const direct: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) direct.push(b);
  for (let b = 0xa1; b <= 0xac; b++) direct.push(b);
  for (let b = 0xae; b <= 0xff; b++) direct.push(b);
  const out: string[] = new Array<string>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCodePoint(direct.includes(b) ? b : 256 + extra++);
  return out;
}

export interface Vocabulary {
  tokens: string[];
  types: number[];
  merges: string[];
  special: Record<(typeof SPECIAL_TOKENS)[number], number>;
  /** `controlTokens`, by name. */
  control: Record<string, number>;
}

export function buildVocabulary(
  size: number,
  withFim: boolean,
  controlTokens: readonly string[] = [],
  /** Fillers as ordinary tokens of text (`_f12`) rather than unused ones, which print nothing. */
  printableFillers = false,
): Vocabulary {
  const tokens = byteToUnicode();
  const types = tokens.map(() => 1);
  const merges = MERGES.map(([a, b]) => {
    tokens.push(a + b);
    types.push(1);
    return `${a} ${b}`;
  });
  const special = {} as Vocabulary["special"];
  for (const name of SPECIAL_TOKENS) {
    if (!withFim && name !== "<|endoftext|>") continue;
    special[name] = tokens.length;
    tokens.push(name);
    types.push(3); // control
  }
  const control: Record<string, number> = {};
  for (const name of controlTokens) {
    control[name] = tokens.length;
    tokens.push(name);
    types.push(3);
  }
  for (let i = 0; tokens.length < size; i++) {
    tokens.push(printableFillers ? `_f${i}` : `<|filler_${i}|>`);
    types.push(printableFillers ? 1 : 5); // normal, or unused
  }
  return { tokens, types, merges, special, control };
}

/** A printable token: text of visible ASCII, space, tab or newline; never a control or filler token. */
const BYTES = byteToUnicode();
function wanted(token: string, type: number, oneLine: boolean): boolean {
  if (type !== 1) return false;
  const bytes = BYTES;
  for (const ch of token) {
    const b = bytes.indexOf(ch);
    if (b < 0) return false;
    if (!((b === 0x0a && !oneLine) || b === 0x20 || (b >= 0x21 && b <= 0x7e))) return false;
  }
  return true;
}

class Writer {
  private chunks: Buffer[] = [];
  length = 0;
  push(buffer: Buffer): void {
    this.chunks.push(buffer);
    this.length += buffer.length;
  }
  u32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    this.push(b);
  }
  i32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    this.push(b);
  }
  u64(n: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    this.push(b);
  }
  f32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(n);
    this.push(b);
  }
  string(s: string): void {
    const bytes = Buffer.from(s, "utf8");
    this.u64(bytes.length);
    this.push(bytes);
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

type Value =
  | { t: "u32"; v: number }
  | { t: "i32"; v: number }
  | { t: "f32"; v: number }
  | { t: "bool"; v: boolean }
  | { t: "str"; v: string }
  | { t: "strs"; v: string[] }
  | { t: "i32s"; v: number[] };

function writeValue(w: Writer, value: Value): void {
  switch (value.t) {
    case "u32":
      w.u32(ValueType.U32);
      w.u32(value.v);
      return;
    case "i32":
      w.u32(ValueType.I32);
      w.i32(value.v);
      return;
    case "f32":
      w.u32(ValueType.F32);
      w.f32(value.v);
      return;
    case "bool":
      w.u32(ValueType.BOOL);
      w.push(Buffer.from([value.v ? 1 : 0]));
      return;
    case "str":
      w.u32(ValueType.STRING);
      w.string(value.v);
      return;
    case "strs":
      w.u32(ValueType.ARRAY);
      w.u32(ValueType.STRING);
      w.u64(value.v.length);
      for (const s of value.v) w.string(s);
      return;
    case "i32s":
      w.u32(ValueType.ARRAY);
      w.u32(ValueType.I32);
      w.u64(value.v.length);
      for (const n of value.v) w.i32(n);
      return;
  }
}

interface TensorSpec {
  name: string;
  /** Innermost first, as ggml's ne[]. */
  dims: number[];
  type: TensorType;
  /** Fills `out`, the tensor's bytes from `offset` on (whole rows: a big tensor is written in slices). */
  fill: (out: Buffer, random: () => number, offset: number) => void;
}

function tensorBytes(spec: TensorSpec): number {
  const count = spec.dims.reduce((a, b) => a * b, 1);
  return spec.type === TensorType.F32 ? count * 4 : (count / 32) * 34;
}

/** f32 to IEEE half, for Q8_0 scales (normal range only, which is all a scale here needs). */
function toHalf(value: number): number {
  const f = new Float32Array([value]);
  const u = new Uint32Array(f.buffer)[0]!;
  const sign = (u >>> 16) & 0x8000;
  const exponent = ((u >>> 23) & 0xff) - 127 + 15;
  const mantissa = (u >>> 13) & 0x3ff;
  if (exponent <= 0) return sign;
  return sign | (exponent << 10) | mantissa;
}

function randomFill(type: TensorType, scale: number): TensorSpec["fill"] {
  if (type === TensorType.F32) {
    return (out, random) => {
      for (let i = 0; i < out.length; i += 4) out.writeFloatLE((random() * 2 - 1) * scale, i);
    };
  }
  const half = toHalf(scale / 127);
  return (out, random) => {
    for (let block = 0; block < out.length; block += 34) {
      out.writeUInt16LE(half, block);
      // Two int8s per random draw keeps a 670 MB file within seconds.
      for (let i = 0; i < 32; i += 2) {
        const r = (random() * 65536) | 0;
        out.writeInt8((r & 0xff) - 128, block + 2 + i);
        out.writeInt8((r >>> 8) - 128, block + 3 + i);
      }
    }
  };
}

/**
 * Q8_0 rows of `width` values whose dimension LEAD (in each row's first block) is `lead(row)` and the rest random
 * within `scale`: the quantised form of the F32 embeddings and output below, so the realistic shape writes text too.
 */
function ledQ8Fill(width: number, scale: number, lead: (row: number) => number): TensorSpec["fill"] {
  const rowBytes = (width / 32) * 34;
  const randomHalf = toHalf(scale / 127);
  return (out, random, offset) => {
    for (let row = 0; row * rowBytes < out.length; row++) {
      const start = row * rowBytes;
      const value = lead(offset / rowBytes + row);
      const firstScale = Math.max(Math.abs(value), scale) / 127;
      out.writeUInt16LE(toHalf(firstScale), start);
      out.writeInt8(Math.round(value / firstScale), start + 2);
      for (let i = 1; i < 32; i++) out.writeInt8(Math.round(((random() * 2 - 1) * scale) / firstScale), start + 2 + i);
      // The other blocks as randomFill writes them: two int8s per random draw keeps 151,936 rows within seconds.
      for (let at = start + 34; at < start + rowBytes; at += 34) {
        out.writeUInt16LE(randomHalf, at);
        for (let i = 0; i < 32; i += 2) {
          const r = (random() * 65536) | 0;
          out.writeInt8((r & 0xff) - 128, at + 2 + i);
          out.writeInt8((r >>> 8) - 128, at + 3 + i);
        }
      }
    }
  };
}

/** Writes the model to `path`; returns its vocabulary (token ids for the tests). */
export function writeGgufModel(path: string, options: GgufModelOptions = {}): Vocabulary {
  const n = {
    seed: options.seed ?? 1,
    embd: options.embedding ?? 64,
    layers: options.layers ?? 2,
    heads: options.heads ?? 4,
    kvHeads: options.kvHeads ?? options.heads ?? 4,
    ff: options.feedForward ?? 128,
    ctx: options.contextLength ?? 1024,
  };
  // The realistic shape's 151,936 tokens are nearly all fillers, which random weights pick as often as any: they
  // must print, or its completions would be empty text and nothing would stream.
  const vocab = buildVocabulary(
    options.vocabSize ?? 512,
    !options.withoutFim,
    options.controlTokens,
    options.quantized === true,
  );
  const nVocab = vocab.tokens.length;
  const headDim = n.embd / n.heads;
  const big = options.quantized ? TensorType.Q8_0 : TensorType.F32;
  const eos = vocab.special["<|endoftext|>"];
  const favoured =
    options.favour === undefined || options.favour === "text" ? undefined : vocab.special[options.favour];
  // Dimension 0 carries a constant that dominates the residual stream (see the file comment).
  const LEAD = 0;
  const good = (t: number) =>
    favoured !== undefined ? t === favoured : wanted(vocab.tokens[t]!, vocab.types[t]!, options.oneLine === true);
  // The realistic shape quantises its embeddings too (as Qwen's Q8_0 file does), with the same lead dimension.
  const tensors: TensorSpec[] = options.quantized
    ? [
        { name: "token_embd.weight", dims: [n.embd, nVocab], type: big, fill: ledQ8Fill(n.embd, 0.5, () => 4) },
        ones("output_norm.weight", n.embd),
        {
          name: "output.weight",
          dims: [n.embd, nVocab],
          type: big,
          // Stronger than the F32 output's ±0.5: over 24 layers and 151,936 rows the random part is much larger.
          fill: ledQ8Fill(n.embd, 0.8, (t) => (good(t) ? 6 : -6)),
        },
      ]
    : [
        {
          name: "token_embd.weight",
          dims: [n.embd, nVocab],
          type: TensorType.F32,
          fill: (out, random) => {
            for (let t = 0; t < nVocab; t++)
              for (let d = 0; d < n.embd; d++)
                out.writeFloatLE(d === LEAD ? 4 : (random() * 2 - 1) * 0.5, (t * n.embd + d) * 4);
          },
        },
        ones("output_norm.weight", n.embd),
        {
          name: "output.weight",
          dims: [n.embd, nVocab],
          type: TensorType.F32,
          fill: (out, random) => {
            for (let t = 0; t < nVocab; t++) {
              for (let d = 0; d < n.embd; d++)
                out.writeFloatLE(d === LEAD ? (good(t) ? 0.5 : -0.5) : (random() * 2 - 1) * 0.8, (t * n.embd + d) * 4);
            }
          },
        },
      ];
  for (let layer = 0; layer < n.layers; layer++) {
    const b = `blk.${layer}`;
    tensors.push(
      ones(`${b}.attn_norm.weight`, n.embd),
      matrix(`${b}.attn_q.weight`, [n.embd, n.embd], big, 0.1),
      matrix(`${b}.attn_k.weight`, [n.embd, headDim * n.kvHeads], big, 0.1),
      matrix(`${b}.attn_v.weight`, [n.embd, headDim * n.kvHeads], big, 0.1),
      matrix(`${b}.attn_output.weight`, [n.embd, n.embd], big, 0.02),
      ones(`${b}.ffn_norm.weight`, n.embd),
      matrix(`${b}.ffn_gate.weight`, [n.embd, n.ff], big, 0.1),
      matrix(`${b}.ffn_up.weight`, [n.embd, n.ff], big, 0.1),
      matrix(`${b}.ffn_down.weight`, [n.ff, n.embd], big, 0.02),
    );
  }

  const kv: [string, Value][] = [
    ["general.architecture", { t: "str", v: "llama" }],
    ["general.name", { t: "str", v: `tab-relay test model ${n.seed}` }],
    ["general.alignment", { t: "u32", v: ALIGNMENT }],
    ["general.file_type", { t: "u32", v: options.quantized ? 7 : 0 }],
    ["llama.context_length", { t: "u32", v: n.ctx }],
    ["llama.embedding_length", { t: "u32", v: n.embd }],
    ["llama.block_count", { t: "u32", v: n.layers }],
    ["llama.feed_forward_length", { t: "u32", v: n.ff }],
    ["llama.attention.head_count", { t: "u32", v: n.heads }],
    ["llama.attention.head_count_kv", { t: "u32", v: n.kvHeads }],
    ["llama.rope.dimension_count", { t: "u32", v: headDim }],
    ["llama.rope.freq_base", { t: "f32", v: 10000 }],
    ["llama.attention.layer_norm_rms_epsilon", { t: "f32", v: 1e-6 }],
    ["llama.vocab_size", { t: "u32", v: nVocab }],
    ["tokenizer.ggml.model", { t: "str", v: "gpt2" }],
    ["tokenizer.ggml.pre", { t: "str", v: "qwen2" }],
    ["tokenizer.ggml.tokens", { t: "strs", v: vocab.tokens }],
    ["tokenizer.ggml.token_type", { t: "i32s", v: vocab.types }],
    ["tokenizer.ggml.merges", { t: "strs", v: vocab.merges }],
    ["tokenizer.ggml.bos_token_id", { t: "u32", v: eos }],
    ["tokenizer.ggml.eos_token_id", { t: "u32", v: eos }],
    ["tokenizer.ggml.padding_token_id", { t: "u32", v: eos }],
    ["tokenizer.ggml.add_bos_token", { t: "bool", v: false }],
  ];
  if (!options.withoutFim) {
    const s = vocab.special;
    kv.push(
      ["tokenizer.ggml.fim_pre_token_id", { t: "u32", v: s["<|fim_prefix|>"] }],
      ["tokenizer.ggml.fim_suf_token_id", { t: "u32", v: s["<|fim_suffix|>"] }],
      ["tokenizer.ggml.fim_mid_token_id", { t: "u32", v: s["<|fim_middle|>"] }],
      ["tokenizer.ggml.fim_pad_token_id", { t: "u32", v: s["<|fim_pad|>"] }],
      ["tokenizer.ggml.fim_rep_token_id", { t: "u32", v: s["<|repo_name|>"] }],
      ["tokenizer.ggml.fim_sep_token_id", { t: "u32", v: s["<|file_sep|>"] }],
    );
  }

  const head = new Writer();
  head.push(Buffer.from("GGUF", "ascii"));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(kv.length);
  for (const [key, value] of kv) {
    head.string(key);
    writeValue(head, value);
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const tensor of tensors) {
    head.string(tensor.name);
    head.u32(tensor.dims.length);
    for (const d of tensor.dims) head.u64(d);
    head.u32(tensor.type);
    head.u64(offset);
    offsets.push(offset);
    offset = align(offset + tensorBytes(tensor));
  }
  const fd = openSync(path, "w");
  try {
    const header = head.bytes();
    writeSync(fd, header);
    writeSync(fd, Buffer.alloc(align(header.length) - header.length));
    const random = seededRandom(n.seed);
    let written = 0;
    tensors.forEach((tensor, i) => {
      writeSync(fd, Buffer.alloc(offsets[i]! - written));
      written = offsets[i]!;
      // Big tensors go out in row-aligned slices, so a 670 MB model never sits in memory whole.
      const size = tensorBytes(tensor);
      const rowBytes = (tensor.dims[0]! / 32) * 34;
      const sliceBytes =
        tensor.type === TensorType.F32 || size <= 1 << 24 ? size : rowBytes * Math.floor((34 * 16_384) / rowBytes);
      for (let done = 0; done < size; done += sliceBytes) {
        const out = Buffer.alloc(Math.min(sliceBytes, size - done));
        tensor.fill(out, random, done);
        writeSync(fd, out);
      }
      written += size;
    });
    writeSync(fd, Buffer.alloc(align(written) - written));
  } finally {
    closeSync(fd);
  }
  return vocab;
}

function align(n: number): number {
  return Math.ceil(n / ALIGNMENT) * ALIGNMENT;
}

function ones(name: string, size: number): TensorSpec {
  return {
    name,
    dims: [size],
    type: TensorType.F32,
    fill: (out) => {
      for (let i = 0; i < size; i++) out.writeFloatLE(1, i * 4);
    },
  };
}

function matrix(name: string, dims: number[], type: TensorType, scale: number): TensorSpec {
  return { name, dims, type, fill: randomFill(type, scale) };
}
