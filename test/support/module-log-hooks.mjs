/** The loader hook of module-log.mjs: runs in Node's loader thread, which shares the environment. */
import { appendFileSync } from 'node:fs';
import process from 'node:process';

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  const log = process.env.LEASEHOLD_TEST_MODULE_LOG;
  if (log) appendFileSync(log, `${resolved.url}\n`);
  return resolved;
}
