/**
 * `leasehold run -- CMD`'s words and environment as bytes. Node decodes its argv and environ as
 * UTF-8 and turns each byte that is not UTF-8 into U+FFFD, and spawn() encodes strings back as
 * UTF-8: `\xff\xfe` would reach CMD as `ef bf bd ef bf bd`. The kernel keeps the bytes this
 * process was started with in /proc/self/cmdline and /proc/self/environ; a string holding
 * U+FFFD is looked up there, and when the bytes found decode to exactly that string, they are
 * what CMD gets (child-process-group.ts hands them over through /bin/sh's printf).
 */
import { readFileSync } from 'node:fs';

/** U+FFFD, what Node's decoder puts for each byte that is not UTF-8. */
const REPLACEMENT = '\uFFFD';

/** A NUL-separated /proc file as its entries; null where it cannot be read (no /proc). */
function entries(path: string): Buffer[] | null {
  let raw: Buffer;
  try {
    raw = readFileSync(path);
  } catch {
    return null;
  }
  const out: Buffer[] = [];
  for (let start = 0; start < raw.length;) {
    let end = raw.indexOf(0, start);
    if (end < 0) end = raw.length;
    out.push(raw.subarray(start, end));
    start = end + 1;
  }
  return out;
}

/**
 * The bytes of each of `words`, the last words of this process's command line (`run`'s CMD and
 * its arguments, every word after `--`): from /proc/self/cmdline when it decodes to these very
 * words, else their UTF-8 encoding (no /proc, or argv changed since: process.title).
 */
export function originalWords(words: readonly string[], cmdline: () => Buffer[] | null = () => entries('/proc/self/cmdline')): Buffer[] {
  const utf8 = words.map((w) => Buffer.from(w, 'utf8'));
  if (!words.some((w) => w.includes(REPLACEMENT))) return utf8;
  const all = cmdline();
  if (!all || all.length < words.length) return utf8;
  const tail = all.slice(all.length - words.length);
  return tail.every((bytes, i) => bytes.toString('utf8') === words[i]) ? tail : utf8;
}

/**
 * For each variable of `env` whose value holds U+FFFD and whose name and value are exactly the
 * decoding of one of this process's own environment entries, that entry's value as bytes.
 * Names that are not UTF-8 are not looked for: /bin/sh cannot set such a name (docs/cli.md).
 */
export function originalValues(env: NodeJS.ProcessEnv, environ: () => Buffer[] | null = () => entries('/proc/self/environ')): Map<string, Buffer> {
  const wanted = Object.entries(env).filter(([name, value]) => value?.includes(REPLACEMENT) && !name.includes(REPLACEMENT));
  const out = new Map<string, Buffer>();
  if (wanted.length === 0) return out;
  const own = environ() ?? [];
  for (const [name, value] of wanted) {
    const prefix = Buffer.from(`${name}=`, 'utf8');
    const found = own.find((e) => e.subarray(0, prefix.length).equals(prefix) && e.subarray(prefix.length).toString('utf8') === value);
    if (found) out.set(name, found.subarray(prefix.length));
  }
  return out;
}

/**
 * `bytes` as a printf format that prints exactly them: printable ASCII as it is, every other
 * byte as a three-digit octal escape, and so are `%` and `\` (printf's own) and a leading `-`
 * (an option to some printf). Mostly as long as the bytes: a word near the kernel's bound on one
 * argument (128 KiB) still fits unless most of it is not ASCII.
 */
export function printfFormat(bytes: Buffer): string {
  let out = '';
  bytes.forEach((b, i) => {
    const literal = b >= 0x20 && b <= 0x7e && b !== 0x25 && b !== 0x5c && !(i === 0 && b === 0x2d);
    out += literal ? String.fromCharCode(b) : `\\${b.toString(8).padStart(3, '0')}`;
  });
  return out;
}
