/**
 * For a benchmark's helper process: closes its server and exits on SIGTERM, on SIGINT, or when its stdin closes
 * (the benchmark holds that stdin open, so when it closes the benchmark is gone, and so should the helper be). Call
 * it before announcing the address: a SIGTERM that came before the handler would kill the helper by the default action.
 */
export function stopWith(close: () => Promise<void>): void {
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  process.stdin.once("close", stop);
  process.stdin.resume();
}
