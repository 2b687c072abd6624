import type { Route } from "../router";
import type { LiveEvent } from "@tab-relay/shared/api";

/** A page in <main>. The shell mounts one at a time and forwards live events to it. */
export interface View {
  title: string;
  element: HTMLElement;
  /** Gets focus after an in-app navigation, so screen readers announce the new page. */
  focusTarget: HTMLElement;
  dispose?(): void;
  /** Returns true when the view showed the event itself (so the sidebar need not mark it unread). */
  live?(event: LiveEvent): boolean;
  reconnected?(): void;
  /** A new URL this view can show without being rebuilt (another message in the same conversation). */
  reroute?(route: Route): boolean;
}
