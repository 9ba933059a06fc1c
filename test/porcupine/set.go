package main

// Jepsen's lock-protected set (jepsen-io/etcd, lock.clj): processes add unique elements while
// they hold a lock, and one read at the end. Every acknowledged add must be in that final read;
// one that is not is a lost update. This needs no search, so it is checked directly.

import (
	"fmt"
	"sort"
)

type setVerdict struct {
	key        string
	adds       int
	acked      int
	lost       []string // acknowledged, missing from the final read
	recovered  int      // not acknowledged (failed or unknown), present all the same
	unexpected []string // read but never added
	noRead     bool
}

func checkSet(key string, history []operation) setVerdict {
	v := setVerdict{key: key}
	var final *operation
	added := map[string]bool{}
	for i := range history {
		op := &history[i]
		in := op.input.(setInput)
		if in.Op == "read" {
			if final == nil || op.call > final.call {
				final = op
			}
			continue
		}
		v.adds++
		added[in.Element] = true
	}
	if final == nil {
		v.noRead = true
		return v
	}
	read := map[string]bool{}
	for _, e := range final.output.(setOutput).Elements {
		read[e] = true
		if !added[e] {
			v.unexpected = append(v.unexpected, e)
		}
	}
	for _, op := range history {
		in := op.input.(setInput)
		out := op.output.(setOutput)
		if in.Op != "add" {
			continue
		}
		acked := !out.Unknown && out.Ok
		if acked {
			v.acked++
		}
		switch {
		// An add still running when the final read began may land after it: not judged.
		case acked && op.ret < final.call && !read[in.Element]:
			v.lost = append(v.lost, in.Element)
		case !acked && read[in.Element]:
			v.recovered++
		}
	}
	sort.Strings(v.lost)
	sort.Strings(v.unexpected)
	return v
}

func (v setVerdict) ok() bool { return !v.noRead && len(v.lost) == 0 && len(v.unexpected) == 0 }

func (v setVerdict) String() string {
	s := fmt.Sprintf("set %q: %d adds, %d acknowledged, %d lost, %d unacknowledged but present, %d never added", v.key, v.adds, v.acked, len(v.lost), v.recovered, len(v.unexpected))
	if v.noRead {
		s += "; NO final read: nothing can be judged"
	}
	if len(v.lost) > 0 {
		s += fmt.Sprintf("; LOST (acknowledged, not in the final read): %s", sample(v.lost))
	}
	if len(v.unexpected) > 0 {
		s += fmt.Sprintf("; NEVER ADDED: %s", sample(v.unexpected))
	}
	return s
}

func sample(xs []string) string {
	if len(xs) <= 10 {
		return fmt.Sprint(xs)
	}
	return fmt.Sprintf("%v and %d more", xs[:10], len(xs)-10)
}
