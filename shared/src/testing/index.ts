// Test doubles shared by the packages' tests; not part of the protocol, so not exported from the package root.
export * from "./fakeClock";
