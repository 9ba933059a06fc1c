package main

// Checking a model key by key, one key at a time, under one deadline.
//
// Porcupine's own CheckOperationsVerbose partitions a history with the model's Partition (per
// key here: linearizability is local) but then searches every partition at once, one goroutine
// each. Its search remembers every state it reached with a copy of the set of operations
// linearized so far (a bitset of the partition's size), so a partition of n operations holds at
// least n²/8 bytes (more where operations overlap: each order tried is a state), and all
// partitions hold theirs together until each finishes: 16 writers for 60 s on 2 keys (about
// 1.2 million operations on SQLite) reached 23 GB. Here the same
// Partition splits the history, and each partition is handed to CheckOperationsVerbose alone,
// after the previous one's memory is free: the peak is the largest key's, not the sum.

import (
	"fmt"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
)

type modelVerdict struct {
	result    porcupine.CheckResult
	info      porcupine.LinearizationInfo // the failing key's, for the visualization
	failedKey string
	judged    int // keys with a verdict before the deadline
	largest   int // operations of the largest key
	elapsed   time.Duration
}

func checkModel(model porcupine.Model, ops []operation, deadline time.Time) modelVerdict {
	begin := time.Now()
	v := modelVerdict{result: porcupine.Ok}
	parts := model.Partition(toPorcupine(ops))
	for _, part := range parts {
		if len(part) > v.largest {
			v.largest = len(part)
		}
	}
	for _, part := range parts {
		left := time.Until(deadline)
		if left <= 0 {
			// Out of time: no verdict on the keys left, which is a failure, never a pass.
			v.result = porcupine.Unknown
			break
		}
		res, info := porcupine.CheckOperationsVerbose(model, part, left)
		if res == porcupine.Illegal {
			v.result, v.info, v.failedKey = res, info, part[0].Metadata.(string)
			break
		}
		if res == porcupine.Unknown {
			v.result = res
			break
		}
		v.judged++
	}
	v.elapsed = time.Since(begin)
	return v
}

// One line with what the check cost: the run's time and the process's peak resident memory.
func resourceUse(started time.Time) string {
	var ru syscall.Rusage
	peak := "unknown"
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		peak = fmt.Sprintf("%d MB", ru.Maxrss/1024) // kB on Linux
	}
	return fmt.Sprintf("checker: %.1f s, peak RSS %s", time.Since(started).Seconds(), peak)
}
