/**
 * Stand-in for relay/src/completion/controlTokens.ts (being written on branch h19-trust, same signature): until it is
 * on main, next edits neutralise control tokens here. A control token written in the person's text
 * (`<|editable_region_end|>`, `<|fim_middle|>`, `<｜fim▁hole｜>`) would otherwise end a region or a prompt early in
 * the model's eyes; a zero-width joiner after the opening bracket keeps the text readable and breaks the token.
 */
const CONTROL_TOKEN = /<([|｜])(?=[^\s<>]{0,64}?\1>)/g;

export function neutraliseControlTokens(text: string): { text: string; changed: boolean } {
  if (!text.includes("<|") && !text.includes("<｜")) return { text, changed: false };
  const out = text.replace(CONTROL_TOKEN, "<\u200d$1");
  return { text: out, changed: out !== text };
}
