"""A command for `leasehold run` tests that checks, by itself, that it runs alone.

It takes an exclusive, non-blocking flock on <dir>/exclusive.lock. If another copy holds it,
two copies run at once: it appends a VIOLATION line to <dir>/violations and exits 3.
Otherwise it records itself in <dir>/current ("<identity> <pid> <token>") and keeps the lock
while it runs. With --ignore-term it ignores SIGTERM (to test the SIGKILL after the grace); with
--stop-after MS it takes MS milliseconds to stop after SIGTERM, still holding the lock (a job
finishing its last batch).

    python3 exclusive_child.py <dir> [--ignore-term | --stop-after MS]
"""
import fcntl
import os
import signal
import sys
import time

d = sys.argv[1]
if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if "--stop-after" in sys.argv:
    stop_after = int(sys.argv[sys.argv.index("--stop-after") + 1]) / 1000.0

    def finish_then_exit(_signum, _frame):
        time.sleep(stop_after)
        sys.exit(0)

    signal.signal(signal.SIGTERM, finish_then_exit)
me = "%s %d %s" % (os.environ.get("LEASEHOLD_IDENTITY"), os.getpid(), os.environ.get("LEASEHOLD_FENCING_TOKEN"))
lock = open(os.path.join(d, "exclusive.lock"), "w")
try:
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError:
    with open(os.path.join(d, "violations"), "a") as f:
        f.write("VIOLATION: %s started while another copy ran\n" % me)
    sys.exit(3)
with open(os.path.join(d, "current.tmp"), "w") as f:
    f.write(me + "\n")
os.replace(os.path.join(d, "current.tmp"), os.path.join(d, "current"))
print("child running: " + me, flush=True)
while True:
    time.sleep(0.05)
