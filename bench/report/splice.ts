/**
 * `--splice`: the section of docs/benchmarks.md a phase produces, replaced, and the rest of the
 * file byte for byte as it was. A section runs from its heading line to the next heading of its
 * level or above (a `#` line inside a fenced code block is no heading), or to the end.
 */

interface Heading {
  /** Offset of the heading line in the document. */
  at: number;
  line: string;
  level: number;
}

function headings(doc: string): Heading[] {
  const out: Heading[] = [];
  let fenced = false;
  let at = 0;
  for (const line of doc.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const hashes = fenced ? undefined : /^(#{1,6}) /.exec(line)?.[1];
    if (hashes) out.push({ at, line, level: hashes.length });
    at += line.length + 1;
  }
  return out;
}

/**
 * `doc` with the section under the heading line `heading` replaced by `body` (which starts with
 * that heading), one blank line before the heading that follows. A document without that heading
 * gets the section just before the first of `before` it has (the headings of the sections that
 * follow it in a full run), else at its end.
 */
export function spliceSection(doc: string, heading: string, body: string, before: readonly string[] = []): string {
  const all = headings(doc);
  const i = all.findIndex((h) => h.line === heading);
  const section = body.trimEnd();
  if (i >= 0) {
    const end = all.slice(i + 1).find((h) => h.level <= all[i]!.level)?.at ?? doc.length;
    return `${doc.slice(0, all[i]!.at)}${section}\n${end < doc.length ? '\n' : ''}${doc.slice(end)}`;
  }
  const next = before.map((b) => all.find((h) => h.line === b)).find((h) => h !== undefined);
  if (next) return `${doc.slice(0, next.at)}${section}\n\n${doc.slice(next.at)}`;
  return `${doc.trimEnd()}\n\n${section}\n`;
}
