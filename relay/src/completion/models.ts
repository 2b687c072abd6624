import type { TabModel } from "@tab-relay/shared";

/** 2025-01-01T00:00:00Z: when tab-v1 was first listed. */
const TAB_V1_CREATED = 1_735_689_600;

/** The models this relay serves. Whatever provider is configured, clients ask for `tab-v1`. */
export const TAB_MODELS: readonly TabModel[] = Object.freeze([
  {
    id: "tab-v1",
    object: "model",
    created: TAB_V1_CREATED,
    owned_by: "tab-relay",
    pricing: { inputPerMillionUsd: 0.2, outputPerMillionUsd: 0.5 },
    capabilities: { streaming: true, surfaces: ["any", "code", "notes", "docs", "messages", "tasks", "calendar"] },
  },
]);

export function findModel(id: string): TabModel | undefined {
  return TAB_MODELS.find((model) => model.id === id);
}
