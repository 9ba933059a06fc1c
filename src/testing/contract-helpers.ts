/** What the store contract suites (lease-store-contract.ts, group-store-contract.ts) share. */

/** The code of the error `p` rejects with, 'ok' when it resolves: what a contract compares. */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? `uncoded: ${String(err)}`;
  }
}

/** Waits for a condition, not for time: polls every 10 ms up to `ms`. */
export async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
