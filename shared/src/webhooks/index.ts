export * from "./events";
export * from "./signing";
export * from "./agent";
export * from "./socketMode";
