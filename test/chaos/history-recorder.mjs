/**
 * Writes a recorded history (docs/testing.md "Recorded histories"): one file per process,
 * append-only. A call line is written (synchronously) before the operation starts and a
 * completion line naming its id when the outcome is known, so a process killed or frozen
 * mid-call leaves a call with no return: an unknown outcome, as it is.
 *
 * Times are ns of the machine's monotonic clock (process.hrtime.bigint(): CLOCK_MONOTONIC on
 * Linux, counted from boot, one clock for every process of the machine, and never stepped),
 * written as JSON integers. Not the wall clock through performance.timeOrigin: that origin is
 * an estimate each process takes as it starts, and a process started on a loaded machine can
 * be off by a millisecond or more, which turns a read just after a write into a stale read.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';

const now = () => process.hrtime.bigint();

/** A history file in `dir` for this process, `${prefix}-${pid}.jsonl`. */
export function openHistory(dir, prefix) {
  const fd = openSync(join(dir, `${prefix}-${process.pid}.jsonl`), 'a');
  let next = 0;
  const write = (line) => writeSync(fd, line + '\n');
  return {
    /** Records the call; returns the id to complete it with. */
    call(model, key, op, input) {
      const id = next++;
      const t = now();
      write(
        `{"id":${id},"process":${process.pid},"call":${t},"model":${JSON.stringify(model)},"key":${JSON.stringify(key)},"op":${JSON.stringify(op)},"input":${JSON.stringify(input ?? {})}}`,
      );
      return id;
    },
    /** The time of a call to record later with `whole` (a list, read whole when it returns). */
    stamp() {
      return now();
    },
    /** Records an operation called at `callStamp` whose outcome is known now: one line. */
    whole(model, key, op, input, callStamp, output) {
      const t = now();
      write(
        `{"process":${process.pid},"call":${callStamp},"return":${t},"model":${JSON.stringify(model)},"key":${JSON.stringify(key)},"op":${JSON.stringify(op)},"input":${JSON.stringify(input ?? {})},"output":${JSON.stringify(output)}}`,
      );
    },
    /** Records the outcome of call `id`. Not called when the outcome is unknown. */
    done(id, output) {
      const t = now();
      write(`{"id":${id},"return":${t},"output":${JSON.stringify(output)}}`);
    },
    close() {
      closeSync(fd);
    },
  };
}
