/**
 * The judgement of an injection mode switch (test/cluster/mode-switch-checks.ts): labelled pod
 * creations tried all along, each answered by one injector, then a window, then the other.
 */

export interface Admission {
  at: number;
  /** Who injected the admitted pod, `none` for one admitted without the sidecar; `refused` with the API server's answer. */
  by: 'webhook' | 'policy' | 'none' | 'twice' | 'refused';
  error?: string;
}

export interface SwitchJudgement {
  /** Why the admissions do not show one switch from `from` to `to`, or null. */
  problem: string | null;
  /** From the first admission not by `from` to the last not by `to`: 0 for a switch with no gap. */
  windowMs: number;
  /** What the window held, by kind (`refused 3, none 2`). */
  inWindow: string;
}

/**
 * Reads the admissions as one switch: all by `from`, then a window, then all by `to`. The window
 * may hold only `from`, `to` and the kinds in `allowed`; a pod injected twice is never allowed.
 */
export function judgeSwitch(admissions: Admission[], from: Admission['by'], to: Admission['by'], allowed: Admission['by'][]): SwitchJudgement {
  const first = admissions.findIndex((a) => a.by !== from);
  const last = admissions.findLastIndex((a) => a.by !== to);
  const window = first === -1 || last === -1 ? [] : admissions.slice(first, last + 1);
  const counts = new Map<string, number>();
  for (const a of window) if (a.by !== from && a.by !== to) counts.set(a.by, (counts.get(a.by) ?? 0) + 1);
  const inWindow = [...counts].map(([k, v]) => `${k} ${v}`).join(', ') || 'nothing else';
  const windowMs = window.length === 0 ? 0 : window.at(-1)!.at - window[0]!.at;
  const say = (problem: string | null) => ({ problem, windowMs, inWindow });
  if (admissions.length === 0) return say('no admission tried');
  if (admissions[0]!.by !== from) return say(`the first admission was ${admissions[0]!.by}, not by the ${from}`);
  if (admissions.at(-1)!.by !== to) return say(`the last admission was ${admissions.at(-1)!.by}, not by the ${to}`);
  const stray = window.find((a) => a.by !== from && a.by !== to && !allowed.includes(a.by));
  if (stray)
    return say(
      `an admission ${stray.by === 'none' ? 'without the sidecar' : stray.by === 'twice' ? 'with two sidecars' : stray.by}${stray.error ? ` (${stray.error})` : ''}`,
    );
  return say(null);
}
