import { RelayError } from "@tab-relay/shared";
import type { WallClock } from "../clock";
import type { ApiKey, Store, User } from "../store/types";
import { ROLE_SCOPES, type Scope } from "./scopes";
import { hashSecret, newApiKeySecret, newId, secretHint } from "./secrets";

export interface CreatedApiKey {
  key: ApiKey;
  /** The only time the secret exists outside the caller's hands. */
  secret: string;
}

/** Creates a key for `user`; the secret is returned once and only its hash is stored. */
export async function createApiKey(
  store: Store,
  clock: WallClock,
  input: { workspaceId: string; user: User; name: string; scopes: readonly Scope[] },
): Promise<CreatedApiKey> {
  const allowed = ROLE_SCOPES[input.user.role];
  const beyondRole = input.scopes.filter((scope) => !allowed.includes(scope));
  if (beyondRole.length > 0) {
    throw new RelayError("FORBIDDEN", `A ${input.user.role} cannot hold the scopes: ${beyondRole.join(", ")}`);
  }
  const secret = newApiKeySecret();
  const key = await store.apiKeys.create({
    id: newId("key"),
    workspaceId: input.workspaceId,
    userId: input.user.id,
    name: input.name,
    scopes: [...new Set(input.scopes)],
    secretHash: hashSecret(secret),
    hint: secretHint(secret),
    createdAt: new Date(clock.now()).toISOString(),
  });
  return { key, secret };
}

/** What the key may do: the scopes it names, limited by its user's role. */
export function effectiveScopes(key: ApiKey, user: User): Set<Scope> {
  const allowed = ROLE_SCOPES[user.role];
  return new Set(key.scopes.filter((scope) => allowed.includes(scope)));
}
