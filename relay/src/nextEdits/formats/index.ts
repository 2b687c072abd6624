import { chatFormat } from "./chat";
import { type NextEditFormat, type NextEditFormatName } from "./format";
import { instinctFormat } from "./instinct";
import { zetaFormat } from "./zeta";

export { NEXT_EDIT_FORMATS, type NextEditFormat, type NextEditFormatName, type FormatInput } from "./format";

const FORMATS: Record<NextEditFormatName, NextEditFormat> = {
  zeta: zetaFormat,
  instinct: instinctFormat,
  chat: chatFormat,
};

/** The format set in TAB_RELAY_NEXT_EDIT_FORMAT, or the one the model's name says (zeta, instinct), or chat. */
export function nextEditFormat(model: string, configured: NextEditFormatName | undefined): NextEditFormat {
  if (configured) return FORMATS[configured];
  const name = model.toLowerCase();
  if (/(^|[/:_-])zeta($|[/:_.-])/.test(name)) return FORMATS.zeta;
  if (name.includes("instinct")) return FORMATS.instinct;
  return FORMATS.chat;
}
