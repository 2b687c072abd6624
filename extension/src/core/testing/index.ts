// Test doubles for the pipeline's effects, shared by unit tests, the integration test and the typing benchmark.
export * from "./fakeClock";
export * from "./fakeFetch";
export * from "./fixtures";
