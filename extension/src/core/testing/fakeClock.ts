// The pipeline's tests use the repository's one fake clock.
export { FakeClock, settle } from "@tab-relay/shared/testing";
