/**
 * Loaded with --import into every test process of a coverage run, so that the processes the
 * tests start (the built CLI, npm, tsc, Python peers) do not inherit NODE_V8_COVERAGE: with
 * their reports in the run, Node 20 gave up on the whole report ("Could not report code
 * coverage"), and the built CLI has no source maps to count against src/ anyway. This process
 * still writes its own report: Node read the variable when it started.
 */
import process from 'node:process';

delete process.env.NODE_V8_COVERAGE;
