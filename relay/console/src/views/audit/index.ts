export { auditView } from "./audit";
