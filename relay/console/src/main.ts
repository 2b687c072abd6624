/** The console's shell: session, routing, the live connection, the sidebar menu, and which view is in <main>. */
import { ApiError, api, onUnauthorized, restoreCsrfToken, setCsrfToken } from "./api";
import { busy, byId, clearError, describeError, errorSlot, h, showError } from "./dom";
import { type LiveState, createLive } from "./live";
import { type Route, currentPath, currentRoute, navigate, startRouter } from "./router";
import { app, forgetDirectory } from "./state";
import type { LiveEvent, Session } from "@tab-relay/shared/api";
import { agentView, agentsView } from "./views/agents";
import { auditView } from "./views/audit";
import { conversationView, homeView, isOwnMessage } from "./views/conversations";
import { insightsView } from "./views/insights";
import { keysView } from "./views/keys";
import { peopleView } from "./views/people";
import { playgroundView } from "./views/playground";
import { loadConversations, markUnread, renderSidebar, resetSidebar, setActive } from "./views/sidebar";
import { signinView } from "./views/signin";
import type { View } from "./views/view";

const main = byId("main");
const sidebar = byId("sidebar");
const menuButton = byId<HTMLButtonElement>("menu-button");
const signOutButton = byId<HTMLButtonElement>("sign-out");
const signOutError = errorSlot();
signOutError.classList.add("inline");
signOutButton.after(signOutError);

let view: View | null = null;
let signinNotice: string | null = null;
let booted = false;
let firstRender = true;

const LIVE_TEXT: Record<LiveState, string> = {
  connected: "Live",
  connecting: "Connecting…",
  disconnected: "Offline, reconnecting…",
};

const live = createLive(
  {
    event: onLive,
    state(state) {
      app.live = state;
      const indicator = byId("live-status");
      indicator.dataset.state = state;
      indicator.textContent = LIVE_TEXT[state];
    },
    reopened() {
      void loadConversations();
      view?.reconnected?.();
    },
    async shouldReconnect() {
      if (!app.session) return false;
      try {
        const session = await api<Session>("GET", "/sessions/current");
        setCsrfToken(session.csrf_token);
        return mayListen(session);
      } catch (error) {
        // A 401 has already signed the console out; anything else (relay restarting) is worth another try.
        return !(error instanceof ApiError && error.status === 401);
      }
    },
  },
  {
    open: () => new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/v1/live`),
    later(run, ms) {
      const timer = setTimeout(run, ms);
      return () => clearTimeout(timer);
    },
    random: Math.random,
  },
);

/** The relay opens the live connection only to a session holding messages.read or agents.read. */
function mayListen(session: Session): boolean {
  return session.scopes.includes("messages.read") || session.scopes.includes("agents.read");
}

function onLive(event: LiveEvent): void {
  if (event.type === "hello") {
    // The cookie is shared by every tab: someone signed in as another person elsewhere, so this page's state is stale.
    if (app.session && event.user.id !== app.session.user.id) location.reload();
  } else if (event.type === "message.created") {
    const shown = view?.live?.(event) ?? false;
    if (!shown && !isOwnMessage(event.message)) markUnread(event.conversation.type, event.conversation.id);
  } else if (event.type === "agent.updated") {
    // A renamed or new agent must be offered for mentions without a reload.
    forgetDirectory();
    view?.live?.(event);
  }
}

function notFoundView(): View {
  const heading = h("h1", { tabindex: "-1" }, "Page not found");
  return {
    title: "Not found",
    element: h("div", { class: "page" }, heading, h("p", null, h("a", { href: "/" }, "Go to the conversations"))),
    focusTarget: heading,
  };
}

function viewFor(route: Route): View {
  switch (route.name) {
    case "home":
      return homeView();
    case "conversation":
      return conversationView(route);
    case "agents":
      return agentsView();
    case "agent":
      return agentView(route.id);
    case "keys":
      return keysView();
    case "playground":
      return playgroundView();
    case "people":
      return peopleView();
    case "audit":
      return auditView();
    case "insights":
      return insightsView();
    default:
      return notFoundView();
  }
}

function mount(next: View, focus: boolean): void {
  view?.dispose?.();
  view = next;
  main.replaceChildren(next.element);
  scrollTo(0, 0);
  document.title = `${next.title} · tab-relay`;
  if (focus) next.focusTarget.focus();
}

function render(route: Route): void {
  if (!booted) return;
  setMenu(false, false);
  const focus = !firstRender;
  firstRender = false;
  if (!app.session) {
    if (route.name !== "signin") {
      const here = currentPath();
      navigate(here === "/" ? "/signin" : `/signin?next=${encodeURIComponent(here)}`, { replace: true });
      return;
    }
    document.body.classList.add("signed-out");
    mount(
      signinView(signinNotice, (session) => {
        signinNotice = null;
        signedIn(session);
        navigate(route.next, { replace: true });
      }),
      focus,
    );
    return;
  }
  if (route.name === "signin") {
    navigate(route.next, { replace: true });
    return;
  }
  setActive(route);
  if (view?.reroute?.(route)) return;
  mount(viewFor(route), focus);
}

function signedIn(session: Session): void {
  app.session = session;
  setCsrfToken(session.csrf_token);
  document.body.classList.remove("signed-out");
  byId("whoami").textContent = `${session.user.name} · ${session.workspace.name}`;
  renderSidebar();
  void loadConversations();
  if (mayListen(session)) live.start();
}

function signedOut(notice: string, keepPlace: boolean): void {
  if (!app.session) return;
  const here = currentPath();
  app.session = null;
  live.stop();
  setCsrfToken(null);
  forgetDirectory();
  resetSidebar();
  view?.dispose?.();
  view = null;
  signinNotice = notice;
  document.body.classList.add("signed-out");
  clearError(signOutError);
  navigate(keepPlace && here !== "/" ? `/signin?next=${encodeURIComponent(here)}` : "/signin", { replace: true });
}

function setMenu(open: boolean, moveFocus = true): void {
  const wasOpen = document.body.classList.contains("menu-open");
  if (open === wasOpen) return;
  document.body.classList.toggle("menu-open", open);
  menuButton.setAttribute("aria-expanded", String(open));
  if (!moveFocus) return;
  if (open) sidebar.querySelector<HTMLElement>("a")?.focus();
  else menuButton.focus();
}

menuButton.addEventListener("click", () => setMenu(!document.body.classList.contains("menu-open")));
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && document.body.classList.contains("menu-open")) setMenu(false);
});
main.addEventListener("click", () => setMenu(false, false));

signOutButton.addEventListener("click", () => {
  clearError(signOutError);
  void busy(signOutButton, async () => {
    await api("DELETE", "/sessions/current");
    signedOut("You signed out.", false);
  }).catch((error: unknown) => {
    if (!(error instanceof ApiError && error.status === 401)) showError(signOutError, error);
  });
});

async function boot(): Promise<void> {
  restoreCsrfToken();
  onUnauthorized(() => signedOut("Your session has ended. Sign in again.", true));
  startRouter(render);
  try {
    signedIn(await api<Session>("GET", "/sessions/current", { expect401: true }));
  } catch (error) {
    setCsrfToken(null);
    if (!(error instanceof ApiError && error.status === 401)) {
      const heading = h("h1", { tabindex: "-1" }, "The relay could not be reached");
      const retry = h("button", { type: "button", class: "primary", onclick: () => location.reload() }, "Try again");
      main.replaceChildren(
        h(
          "div",
          { class: "page" },
          heading,
          h("p", { class: "error", role: "alert", "data-testid": "error" }, describeError(error)),
          retry,
        ),
      );
      return;
    }
  }
  booted = true;
  render(currentRoute());
}

void boot();
