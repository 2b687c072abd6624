/**
 * Compile-time checks, run by `npm run typecheck` with the console's settings and never bundled: the console reads
 * the relay's answers as the types in @tab-relay/shared/api, so a copy of them here that drifts from what the relay
 * sends fails to compile. test/types/apiAnswers.ts checks the types themselves against the relay.
 */
import type { Agent, LiveEvent, Member, Scope, Session, User } from "@tab-relay/shared/api";
import type { matchCandidates } from "./mentions";
import type { app, Directory, hasScope } from "./state";
import type { SCOPE_CATALOGUE } from "./views/keys";
import type { View } from "./views/view";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Assert<T extends true> = T;

export type ConsoleReadsTheApiTypes = [
  Assert<Equal<(typeof app)["session"], Session | null>>,
  Assert<Equal<Directory, { users: User[]; agents: Agent[] }>>,
  Assert<Equal<Parameters<typeof matchCandidates>[0], Member[]>>,
  Assert<Equal<Parameters<NonNullable<View["live"]>>[0], LiveEvent>>,
  Assert<Equal<Parameters<typeof hasScope>[0], Scope>>,
  Assert<Equal<keyof typeof SCOPE_CATALOGUE, Scope>>,
];
