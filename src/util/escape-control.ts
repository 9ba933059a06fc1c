/**
 * Control characters (C0, DEL, C1) and the Unicode line separators: what would break a line in
 * a file, a log or a terminal. Identities are refused with them; values read back are escaped.
 */
export const CONTROL = /[\p{Cc}\u2028\u2029]/u;

/** True if `text` holds a control character or a line separator. */
export function hasControl(text: string): boolean {
  return CONTROL.test(text);
}

/**
 * A value that came from a store (another candidate's identity) may hold control characters
 * (only leasehold refuses them in its own): escaped as \uXXXX, it stays one line and cannot
 * move a terminal's cursor or forge a line in a file or on screen.
 */
export function escapeControl(text: string): string {
  return text.replace(new RegExp(CONTROL.source, 'gu'), (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * For a terminal, also the invisible format characters (Unicode category Cf): bidi overrides
 * and isolates (U+202A–U+202E, U+2066–U+2069) reorder what the screen shows, zero-width ones
 * (U+200B–U+200F, U+FEFF) hide text. Only on screen: the status files keep the holder as
 * docs/status-files.md describes it (control characters escaped, nothing else).
 */
export function escapeForTerminal(text: string): string {
  return escapeControl(text).replace(/\p{Cf}/gu, (c) => {
    const hex = c.codePointAt(0)!.toString(16);
    return c.length > 1 ? `\\u{${hex}}` : `\\u${hex.padStart(4, '0')}`;
  });
}

/**
 * JSON for a body someone may print raw (`curl` on a terminal): what escapeForTerminal escapes
 * is written as JSON's own \uXXXX escapes (a pair for a character past U+FFFF). Such
 * characters can only stand inside strings, so the JSON parses to the same value; only its
 * bytes can no longer move a cursor, reorder a line or hide text.
 */
export function jsonForTerminal(value: unknown): string {
  return JSON.stringify(value).replace(new RegExp(`${CONTROL.source}|\\p{Cf}`, 'gu'), (c) =>
    [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''),
  );
}
