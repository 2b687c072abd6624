export { createLocalProvider, predictContinuation, splitIntoFragments } from "./localProvider";
