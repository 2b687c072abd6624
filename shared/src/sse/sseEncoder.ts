export interface SseEvent {
  event?: string;
  id?: string;
  data: string;
}

/** Encodes one server-sent event; multi-line data becomes several `data:` lines, as the SSE format requires. */
export function encodeSseEvent(message: SseEvent): string {
  let out = "";
  if (message.event !== undefined) out += `event: ${singleLine(message.event, "event")}\n`;
  if (message.id !== undefined) out += `id: ${singleLine(message.id, "id")}\n`;
  for (const line of message.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

function singleLine(value: string, field: string): string {
  if (/[\r\n]/.test(value)) throw new Error(`SSE ${field} must not contain CR or LF`);
  return value;
}
