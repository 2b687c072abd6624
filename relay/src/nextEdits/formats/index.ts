import { chatFormat } from "./chat";
import { type NextEditFormat, type NextEditFormatName } from "./format";
import { instinctFormat } from "./instinct";
import { zetaFormat } from "./zeta";
import { zeta2Format } from "./zeta2";

export { NEXT_EDIT_FORMATS, type NextEditFormat, type NextEditFormatName, type FormatInput } from "./format";

const FORMATS: Record<NextEditFormatName, NextEditFormat> = {
  zeta: zetaFormat,
  zeta2: zeta2Format,
  instinct: instinctFormat,
  chat: chatFormat,
};

/**
 * The format set in TAB_RELAY_NEXT_EDIT_FORMAT, or the one the model's name says (zeta-2 or zeta2: zeta2; zeta:
 * zeta; instinct), or chat. A later Zeta (zeta-2.1 and on) speaks another format (Zed's V0318SeedMultiRegions), which
 * the relay does not: its name implies none of these, as sending it Zeta 1's or Zeta 2's prompt would make it rewrite
 * the file wrongly (zed#52585).
 */
export function nextEditFormat(model: string, configured: NextEditFormatName | undefined): NextEditFormat {
  if (configured) return FORMATS[configured];
  const name = model.toLowerCase();
  const zeta = /(^|[/:_-])zeta(?:[-_.]?(\d+)(?:\.(\d+))?)?($|[/:_.-])/.exec(name);
  if (zeta && zeta[2] === "2" && (zeta[3] === undefined || zeta[3] === "0")) return FORMATS.zeta2;
  if (zeta && zeta[2] === undefined) return FORMATS.zeta;
  if (name.includes("instinct")) return FORMATS.instinct;
  return FORMATS.chat;
}
