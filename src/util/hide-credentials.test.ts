import { it } from 'node:test';
import assert from 'node:assert/strict';
import { hideCredentials } from './hide-credentials.js';

it("hides a URL's user and password, in any form a user may type it", () => {
  assert.equal(hideCredentials('http://user:hunter2@127.0.0.1:8080/healthz'), 'http://<credentials hidden>@127.0.0.1:8080/healthz');
  assert.equal(hideCredentials('postgres://u:p@ss/w:rd@db:5432/x'), 'postgres://<credentials hidden>@db:5432/x');
  assert.equal(hideCredentials('HTTP://u:hunter2@h/'), 'HTTP://<credentials hidden>@h/');
  assert.equal(hideCredentials('http://hunter2@h/'), 'http://<credentials hidden>@h/', 'a user alone may be a token');
  assert.equal(hideCredentials('user:hunter2@localhost:8080', { schemeless: true }), '<credentials hidden>@localhost:8080');
});

it('keeps a value that carries no password', () => {
  for (const text of ['http://127.0.0.1:8080/healthz', 'app@host', 'billing', '', '@', 'leasehold:1@sha256:0123abcd']) {
    assert.equal(hideCredentials(text), text);
  }
  assert.equal(hideCredentials('app@host', { schemeless: true }), 'app@host');
});
