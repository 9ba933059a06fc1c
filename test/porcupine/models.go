package main

// The sequential models, written from what the stores and the fencing helpers DOCUMENT
// (src/backends/lease-store.ts's LeaseStore contract, docs/stores.md, docs/fencing.md), not
// from how leasehold implements them. Each is nondeterministic only where a recorded outcome is
// unknown: such a write may have taken effect or not, and both states are kept.

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// A lease or shard record: a compare-and-swap register with an opaque version.
//
//	get -> (value, version) or not found;
//	create(value) succeeds iff the record is absent;
//	update(value, expected) succeeds iff the current version equals expected, and then the
//	version changes ("Any write to the record, by anyone, changes it").
//
// After a write whose outcome is unknown, the version it made is unknown too (versionKnown
// false) until a later read or write tells it.
type registerState struct {
	present      bool
	value        string
	version      string
	versionKnown bool
}

var registerModel = porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []interface{} { return []interface{}{registerState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s := state.(registerState)
		in := input.(registerInput)
		out := output.(registerOutput)
		switch in.Op {
		case "get":
			if !out.Found {
				return when(!s.present, s)
			}
			if !s.present || s.value != out.Value || (s.versionKnown && s.version != out.Version) {
				return nil
			}
			return []interface{}{registerState{true, s.value, out.Version, true}}
		case "create":
			written := registerState{true, in.Value, out.Version, !out.Unknown}
			switch {
			case out.Unknown:
				return append([]interface{}{s}, when(!s.present, written)...)
			case out.Ok:
				return when(!s.present, written)
			default:
				return when(s.present, s)
			}
		case "update":
			matches := s.present && (!s.versionKnown || s.version == in.Expected)
			written := registerState{true, in.Value, out.Version, !out.Unknown}
			switch {
			case out.Unknown:
				return append([]interface{}{s}, when(matches, written)...)
			case out.Ok:
				// The contract: a successful write changes the version (a group record's may stay
				// when the write changed nothing).
				changed := out.Version != in.Expected || (in.NoopKeepsVersion && in.Value == s.value)
				return when(matches && changed, written)
			default:
				return when(!s.present || !s.versionKnown || s.version != in.Expected, s)
			}
		}
		return nil
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(registerInput)
		out := output.(registerOutput)
		result := "?"
		switch {
		case out.Unknown:
		case in.Op == "get" && !out.Found:
			result = "not found"
		case in.Op == "get":
			result = fmt.Sprintf("%s @%s", out.Value, out.Version)
		case out.Ok:
			result = "ok @" + out.Version
		default:
			result = "conflict"
		}
		switch in.Op {
		case "create":
			return fmt.Sprintf("create(%s) -> %s", in.Value, result)
		case "update":
			return fmt.Sprintf("update(%s if @%s) -> %s", in.Value, in.Expected, result)
		}
		return "get() -> " + result
	},
	DescribeState: func(state interface{}) string {
		s := state.(registerState)
		if !s.present {
			return "absent"
		}
		if !s.versionKnown {
			return s.value + " @?"
		}
		return s.value + " @" + s.version
	},
}

// A fenced resource: a register whose writes carry a token. A write with token t is accepted
// iff t >= the highest token accepted so far (equal: the same leader again in its term), and
// then the highest is t; a read returns the last accepted value (and, where the resource says
// it, that highest token).
type fencedState struct {
	highest int64
	value   string
}

var fencedModel = porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []interface{} { return []interface{}{fencedState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s := state.(fencedState)
		in := input.(fencedInput)
		out := output.(fencedOutput)
		if in.Op == "read" {
			return when(out.Value == s.value && (out.Token == nil || *out.Token == s.highest), s)
		}
		allowed := in.Token >= s.highest
		written := fencedState{in.Token, in.Value}
		switch {
		case out.Unknown:
			return append([]interface{}{s}, when(allowed, written)...)
		case out.Accepted:
			return when(allowed, written)
		default:
			return when(!allowed, s)
		}
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(fencedInput)
		out := output.(fencedOutput)
		if in.Op == "read" {
			if out.Token != nil {
				return fmt.Sprintf("read() -> %s (token %d)", out.Value, *out.Token)
			}
			return "read() -> " + out.Value
		}
		result := "refused"
		if out.Unknown {
			result = "?"
		} else if out.Accepted {
			result = "accepted"
		}
		return fmt.Sprintf("write(%s, token %d) -> %s", in.Value, in.Token, result)
	},
	DescribeState: func(state interface{}) string {
		s := state.(fencedState)
		return fmt.Sprintf("%s (highest token %d)", s.value, s.highest)
	},
}

func when(ok bool, s interface{}) []interface{} {
	if ok {
		return []interface{}{s}
	}
	return nil
}

// Linearizability is local: each record or resource is checked on its own.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	index := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range history {
		key := op.Metadata.(string)
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}
