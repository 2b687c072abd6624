/** One page of a conversation, oldest first; `full` when older messages may exist. */
export interface Page<M> {
  messages: M[];
  full: boolean;
}

/**
 * After a live reconnection: pages back from the newest message until a page reaches one already shown (or the
 * conversation's beginning), so nothing posted during the gap is skipped however long it was. Gives the messages
 * not shown yet, oldest first, and whether the gap was closed within `maxPages`; when it was not, older messages
 * remain between these and what is shown.
 */
export async function catchUp<M extends { id: string }>(
  fetchPage: (before: string | null) => Promise<Page<M>>,
  isShown: (id: string) => boolean,
  maxPages: number,
): Promise<{ messages: M[]; closed: boolean }> {
  const pages: M[][] = [];
  let before: string | null = null;
  for (let count = 0; count < maxPages; count++) {
    const page = await fetchPage(before);
    pages.unshift(page.messages.filter((message) => !isShown(message.id)));
    const first = page.messages[0];
    if (!page.full || first === undefined || page.messages.some((message) => isShown(message.id)))
      return { messages: pages.flat(), closed: true };
    before = first.id;
  }
  return { messages: pages.flat(), closed: false };
}
