"""
`setpgid_spawn.py CMD [ARGS...]`: runs CMD in a process group of its own, as GNU `timeout` and
shells with job control do: it forks, the child calls os.setpgid(0, 0) and execs CMD, and this
process waits for it (and exits on SIGTERM, leaving CMD behind in its group).
"""
import os
import sys

pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.execvp(sys.argv[1], sys.argv[1:])
os.waitpid(pid, 0)
