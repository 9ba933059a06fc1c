"""A candidate written the way the tutorial's Python LeaseStore works: one attempt against
the same `leases` table, expiry judged by comparing renew_time with this machine's wall clock,
inside BEGIN IMMEDIATE. Prints {"acquired", "token", "reason"} as JSON.

    python3 tutorial_candidate.py <db> <lease> <identity> <lease_duration_seconds>
"""
import json
import sqlite3
import sys
import time


def attempt(db, name, identity, duration):
    conn = sqlite3.connect(db, timeout=10.0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute(
            "SELECT holder_identity, fencing_token, renew_time, lease_duration_seconds"
            " FROM leases WHERE name = ?",
            (name,),
        ).fetchone()
        now = time.time()
        if row is None:
            conn.execute(
                "INSERT INTO leases (name, holder_identity, fencing_token, renew_time,"
                " lease_duration_seconds) VALUES (?, ?, ?, ?, ?)",
                (name, identity, 1, now, duration),
            )
            conn.commit()
            return True, 1, "acquired empty lease"
        holder, token, renew_time, held_for = row
        if holder == identity:
            conn.execute(
                "UPDATE leases SET renew_time = ?, lease_duration_seconds = ? WHERE name = ?",
                (now, duration, name),
            )
            conn.commit()
            return True, token, "renewed"
        if holder == "" or now - renew_time > held_for:
            conn.execute(
                "UPDATE leases SET holder_identity = ?, fencing_token = ?, renew_time = ?,"
                " lease_duration_seconds = ? WHERE name = ?",
                (identity, token + 1, now, duration, name),
            )
            conn.commit()
            return True, token + 1, "took over"
        conn.rollback()
        return False, None, "held by %r" % holder
    finally:
        conn.close()


if __name__ == "__main__":
    db, name, identity, duration = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    acquired, token, reason = attempt(db, name, identity, duration)
    print(json.dumps({"acquired": acquired, "token": token, "reason": reason}))
