/**
 * Test-only preload: `node --import ./test/support/module-log.mjs` appends the URL of every
 * module the process resolves through the ES module loader to the file named by
 * LEASEHOLD_TEST_MODULE_LOG, one a line. Used to check which modules a real process loaded
 * (test/cli/sidecar-modules.test.ts). Plain JavaScript: it runs before any TypeScript hook.
 */
import { register } from 'node:module';

register('./module-log-hooks.mjs', import.meta.url);
