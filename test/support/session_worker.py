"""
A worker for `leasehold run`'s session tests: `session_worker.py DIR NAME`. It ignores SIGTERM,
SIGINT and SIGHUP (a long job that does not stop when asked), writes its PID to DIR/worker-NAME, then holds an
exclusive flock on DIR/worker.lock for as long as it lives: the kernel lets it go only when the
process is gone. When another worker holds it, it waits for it and appends to DIR/overlaps
`NAME PID MS`: the milliseconds two workers ran at once. Then it writes DIR/held-NAME and
sleeps until killed (at most 120 s).
"""
import fcntl
import os
import signal
import sys
import time

work, name = sys.argv[1], sys.argv[2]
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
lock = os.open(os.path.join(work, 'worker.lock'), os.O_RDWR | os.O_CREAT, 0o600)
started = time.monotonic()
with open(os.path.join(work, f'worker-{name}.tmp'), 'w') as f:
    f.write(f'{os.getpid()}\n')
os.rename(os.path.join(work, f'worker-{name}.tmp'), os.path.join(work, f'worker-{name}'))
try:
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    fcntl.flock(lock, fcntl.LOCK_EX)
    with open(os.path.join(work, 'overlaps'), 'a') as f:
        f.write(f'{name} {os.getpid()} {(time.monotonic() - started) * 1000:.0f}\n')
with open(os.path.join(work, f'held-{name}'), 'w') as f:
    f.write('held\n')
time.sleep(120)
