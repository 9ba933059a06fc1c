/**
 * A value that came from a store (another candidate's identity) may hold control characters
 * (only leasehold refuses them in its own): escaped as \uXXXX, it stays one line and cannot
 * move a terminal's cursor or forge a line in a file or on screen.
 */
export function escapeControl(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029]/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
