/**
 * Writes a recorded history (docs/testing.md "Recorded histories"): one file per process,
 * append-only. A call line is written (synchronously) before the operation starts and a
 * completion line naming its id when the outcome is known, so a process killed or frozen
 * mid-call leaves a call with no return: an unknown outcome, as it is.
 *
 * Times are wall-clock ns (performance.timeOrigin + performance.now(), to the µs): one clock
 * for every process of one machine. They are written as JSON integers from a BigInt (ns since
 * the epoch pass 2^53), the call rounded down and the return up, so every interval holds the
 * true one.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';

function nowUs() {
  return performance.timeOrigin * 1000 + performance.now() * 1000;
}

/** A history file in `dir` for this process, `${prefix}-${pid}.jsonl`. */
export function openHistory(dir, prefix) {
  const fd = openSync(join(dir, `${prefix}-${process.pid}.jsonl`), 'a');
  let next = 0;
  const write = (line) => writeSync(fd, line + '\n');
  return {
    /** Records the call; returns the id to complete it with. */
    call(model, key, op, input) {
      const id = next++;
      const t = BigInt(Math.floor(nowUs())) * 1000n;
      write(
        `{"id":${id},"process":${process.pid},"call":${t},"model":${JSON.stringify(model)},"key":${JSON.stringify(key)},"op":${JSON.stringify(op)},"input":${JSON.stringify(input ?? {})}}`,
      );
      return id;
    },
    /** The time of a call to record later with `whole` (a list, read whole when it returns). */
    stamp() {
      return BigInt(Math.floor(nowUs())) * 1000n;
    },
    /** Records an operation called at `callStamp` whose outcome is known now: one line. */
    whole(model, key, op, input, callStamp, output) {
      const t = BigInt(Math.ceil(nowUs())) * 1000n;
      write(
        `{"process":${process.pid},"call":${callStamp},"return":${t},"model":${JSON.stringify(model)},"key":${JSON.stringify(key)},"op":${JSON.stringify(op)},"input":${JSON.stringify(input ?? {})},"output":${JSON.stringify(output)}}`,
      );
    },
    /** Records the outcome of call `id`. Not called when the outcome is unknown. */
    done(id, output) {
      const t = BigInt(Math.ceil(nowUs())) * 1000n;
      write(`{"id":${id},"return":${t},"output":${JSON.stringify(output)}}`);
    },
    close() {
      closeSync(fd);
    },
  };
}
