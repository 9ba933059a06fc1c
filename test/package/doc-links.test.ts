/**
 * Every relative link in the Markdown pages names a file that exists and, with a #fragment, a
 * heading of that page (GitHub's anchors). Links from the pages that ship in the package (the
 * README and docs/) must also name shipped files, or they break for whoever reads the installed
 * copy: package.json's "files" decides what ships.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

const pages = [
  'README.md',
  'CONTRIBUTING.md',
  'deploy/helm/leasehold/README.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text outside fenced code blocks, where a `](...)` is code, not a link. */
function prose(markdown: string): string {
  return markdown
    .split(/^```.*$/m)
    .filter((_, i) => i % 2 === 0)
    .join('\n');
}

/** [text](target) links, without external ones; inline code spans are left out. */
export function relativeLinks(markdown: string): string[] {
  const text = prose(markdown).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** GitHub's anchor for each heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, title] of prose(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = title!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const shippedEntries = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { files: string[] }).files.filter((f) => !f.startsWith('!'));
/** Whether a repository path is in the package: npm always adds package.json, the README and LICENSE. */
const ships = (path: string) =>
  ['package.json', 'README.md', 'LICENSE'].includes(path) ||
  shippedEntries.some((f) => (f.endsWith('/') ? path.startsWith(f) : path === f || path.startsWith(`${f}/`)));

it('anchors: GitHub slugs of headings, repeats numbered', () => {
  const md = '# A title\n## Pod labels (`--pod-label`)\n```\n# not a heading\n```\n## A title\n';
  assert.deepEqual([...anchors(md)], ['a-title', 'pod-labels---pod-label', 'a-title-1']);
  assert.deepEqual(relativeLinks('[a](x.md) [b](https://example.com) `[c](y.md)` [d](#e)'), ['x.md', '#e']);
});

it('every relative link in the Markdown pages resolves, anchors included, and shipped pages link only to shipped files', () => {
  const broken: string[] = [];
  for (const page of pages) {
    const from = join(REPO, page);
    for (const link of relativeLinks(readFileSync(from, 'utf8'))) {
      const [path, fragment] = link.split('#') as [string, string | undefined];
      const target = path === '' ? from : resolve(dirname(from), decodeURIComponent(path));
      const repoPath = relative(REPO, target).split('\\').join('/');
      if (!existsSync(target)) {
        broken.push(`${page}: ${link}: no such file ${repoPath}`);
        continue;
      }
      if (fragment !== undefined && target.endsWith('.md') && !anchors(readFileSync(target, 'utf8')).has(fragment)) {
        broken.push(`${page}: ${link}: no heading #${fragment} in ${repoPath}`);
      }
      if (ships(page) && !ships(statSync(target).isDirectory() ? `${repoPath}/` : posix.normalize(repoPath))) {
        broken.push(`${page}: ${link}: ${repoPath} is not in the package (package.json "files"), so the installed copy's link is dead`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

it('docs/README.md, the index, links every page in docs/', () => {
  const index = new Set(relativeLinks(readFileSync(join(REPO, 'docs/README.md'), 'utf8')).map((l) => l.split('#')[0]));
  const unlisted = readdirSync(join(REPO, 'docs')).filter((f) => f.endsWith('.md') && f !== 'README.md' && !index.has(f));
  assert.deepEqual(unlisted, []);
});

it('every page closes its code fences: an open one would hide the rest of the page from the link check', () => {
  const open = pages.filter((page) => (readFileSync(join(REPO, page), 'utf8').match(/^```.*$/gm) ?? []).length % 2 !== 0);
  assert.deepEqual(open, []);
});
