/**
 * The delay before reconnecting after `failures` failures in a row: 100 ms doubling to 5 s, as
 * the Kubernetes watch and the PostgreSQL connection both wait, so a dead server is not hammered
 * and a brief outage is over quickly.
 */
export function reconnectDelayMs(failures: number): number {
  return Math.min(5_000, 100 * 2 ** Math.min(failures, 6));
}
