import type { Stage } from "./stage";

// One line on surfaces where a line break would send or split the entry.

export class SingleLineStop implements Stage {
  stopped = false;
  private hasContent = false;

  push(text: string): string {
    for (let index = 0; index < text.length; index++) {
      const char = text[index] ?? "";
      if (this.hasContent && (char === "\n" || char === "\r")) {
        this.stopped = true;
        return text.slice(0, index);
      }
      if (!/\s/.test(char)) this.hasContent = true;
    }
    return text;
  }

  end(): string {
    return "";
  }
}
