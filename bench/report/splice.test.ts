import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spliceSection } from './splice.js';

const DOC = '# T\n\n## A\n\na\n\n### A1\n\na1\n\n## B\n\n```sh\n# not a heading\n```\n\nb\n\n## C\n\nc\n';

describe('spliceSection', () => {
  it('replaces a section up to the next heading of its level or above, subsections included', () => {
    assert.equal(spliceSection(DOC, '## A', '## A\n\nnew\n'), '# T\n\n## A\n\nnew\n\n## B\n\n```sh\n# not a heading\n```\n\nb\n\n## C\n\nc\n');
    assert.equal(spliceSection(DOC, '### A1', '### A1\n\nnew'), '# T\n\n## A\n\na\n\n### A1\n\nnew\n\n## B\n\n```sh\n# not a heading\n```\n\nb\n\n## C\n\nc\n');
  });

  it('takes no `#` line inside a fenced block for a heading, and runs the last section to the end', () => {
    assert.equal(spliceSection(DOC, '## B', '## B\n\nnew\n'), '# T\n\n## A\n\na\n\n### A1\n\na1\n\n## B\n\nnew\n\n## C\n\nc\n');
    assert.equal(
      spliceSection(DOC, '## C', '## C\n\nnew\n\n\n'),
      '# T\n\n## A\n\na\n\n### A1\n\na1\n\n## B\n\n```sh\n# not a heading\n```\n\nb\n\n## C\n\nnew\n',
    );
  });

  it('puts a missing section before the first of the following headings the document has, else at its end', () => {
    assert.equal(spliceSection(DOC, '## X', '## X\n\nx\n', ['## Y', '## C']), DOC.replace('## C\n', '## X\n\nx\n\n## C\n'));
    assert.equal(spliceSection(DOC, '## X', '## X\n\nx\n', ['## Y']), `${DOC}\n## X\n\nx\n`);
  });

  it('leaves the document byte for byte when a section is written back as it was', () => {
    assert.equal(spliceSection(DOC, '## A', '## A\n\na\n\n### A1\n\na1\n'), DOC);
  });
});
