package main

// Reading a recorded history: JSON lines, one operation per line (docs/testing.md, "Recorded
// histories"). A line with no "return" is an operation whose outcome is unknown (a crash, a
// timeout, an error after the request may have been sent): Porcupine is given an infinite
// return time for it, so it may take effect at any moment after its call, or never.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// A recorded operation as it appears on one line.
type record struct {
	ID      *int64          `json:"id"`
	Process int64           `json:"process"`
	Call    *int64          `json:"call"`
	Return  *int64          `json:"return"`
	Model   string          `json:"model"`
	Key     string          `json:"key"`
	Op      string          `json:"op"`
	Input   json.RawMessage `json:"input"`
	Output  json.RawMessage `json:"output"`
}

// Inputs and outputs of the three models, decoded from the line's "input" and "output".
type registerInput struct {
	Op       string `json:"-"`
	Value    string `json:"value"`
	Expected string `json:"expected"`
	// The GroupStore contract lets a write of the very values a record holds keep its version
	// (the Kubernetes API server persists no no-op update); the LeaseStore contract does not.
	NoopKeepsVersion bool `json:"noopKeepsVersion"`
}

type registerOutput struct {
	Unknown bool   `json:"-"`
	Ok      bool   `json:"ok"`
	Found   bool   `json:"found"`
	Value   string `json:"value"`
	Version string `json:"version"`
}

type fencedInput struct {
	Op    string `json:"-"`
	Token int64  `json:"token"`
	Value string `json:"value"`
}

type fencedOutput struct {
	Unknown  bool   `json:"-"`
	Accepted bool   `json:"accepted"`
	Value    string `json:"value"`
	Token    *int64 `json:"token"`
}

type setInput struct {
	Op      string `json:"-"`
	Element string `json:"element"`
}

type setOutput struct {
	Unknown  bool     `json:"-"`
	Ok       bool     `json:"ok"`
	Elements []string `json:"elements"`
}

// One operation ready for a checker: the line's fields decoded, times in ns.
type operation struct {
	line    int
	process int64
	call    int64
	ret     int64 // math.MaxInt64 when the outcome is unknown
	model   string
	key     string
	input   interface{}
	output  interface{}
}

var ops = map[string][]string{
	"register": {"get", "create", "update"},
	"fenced":   {"read", "write"},
	"set":      {"add", "read"},
}

func readHistory(r io.Reader, name string) ([]operation, error) {
	var records []record
	var lines []int
	byID := map[int64]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		text := sc.Bytes()
		if len(text) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(text, &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: not a JSON object of an operation: %v", name, n, err)
		}
		if rec.Model == "" && rec.ID != nil {
			// A completion line: the outcome of the call line with this id, in this file.
			i, ok := byID[*rec.ID]
			if !ok {
				return nil, fmt.Errorf("%s:%d: a completion of id %d, and no call line of that id before it", name, n, *rec.ID)
			}
			if records[i].Return != nil {
				return nil, fmt.Errorf("%s:%d: a second completion of id %d", name, n, *rec.ID)
			}
			records[i].Return, records[i].Output = rec.Return, rec.Output
			continue
		}
		if rec.ID != nil {
			if _, dup := byID[*rec.ID]; dup {
				return nil, fmt.Errorf("%s:%d: a second call line with id %d", name, n, *rec.ID)
			}
			byID[*rec.ID] = len(records)
		}
		records = append(records, rec)
		lines = append(lines, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	var out []operation
	for i, rec := range records {
		op, err := decode(rec)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, lines[i], err)
		}
		op.line = lines[i]
		if op.ret != math.MaxInt64 || !isRead(op) {
			// A read whose outcome is unknown says nothing: it is left out.
			out = append(out, op)
		}
	}
	return out, nil
}

func isRead(op operation) bool {
	switch in := op.input.(type) {
	case registerInput:
		return in.Op == "get"
	case fencedInput:
		return in.Op == "read"
	case setInput:
		return in.Op == "read"
	}
	return false
}

func decode(rec record) (operation, error) {
	known, ok := ops[rec.Model]
	if !ok {
		return operation{}, fmt.Errorf("model %q: expected register, fenced or set", rec.Model)
	}
	if !contains(known, rec.Op) {
		return operation{}, fmt.Errorf("op %q of model %s: expected one of %v", rec.Op, rec.Model, known)
	}
	if rec.Call == nil {
		return operation{}, fmt.Errorf("no \"call\" time: every operation has one (ns)")
	}
	if rec.Key == "" {
		return operation{}, fmt.Errorf("no \"key\": every operation names its record or resource")
	}
	op := operation{process: rec.Process, call: *rec.Call, ret: math.MaxInt64, model: rec.Model, key: rec.Key}
	unknown := rec.Return == nil
	if !unknown {
		if *rec.Return < *rec.Call {
			return operation{}, fmt.Errorf("return %d before call %d", *rec.Return, *rec.Call)
		}
		if len(rec.Output) == 0 {
			return operation{}, fmt.Errorf("a \"return\" without an \"output\": leave both out when the outcome is unknown")
		}
		op.ret = *rec.Return
	}
	in := rec.Input
	if len(in) == 0 {
		in = json.RawMessage("{}")
	}
	out := rec.Output
	if unknown {
		out = json.RawMessage("{}")
	}
	var err error
	switch rec.Model {
	case "register":
		i, o := registerInput{Op: rec.Op}, registerOutput{Unknown: unknown}
		err = firstError(json.Unmarshal(in, &i), json.Unmarshal(out, &o))
		op.input, op.output = i, o
	case "fenced":
		i, o := fencedInput{Op: rec.Op}, fencedOutput{Unknown: unknown}
		err = firstError(json.Unmarshal(in, &i), json.Unmarshal(out, &o))
		op.input, op.output = i, o
	case "set":
		i, o := setInput{Op: rec.Op}, setOutput{Unknown: unknown}
		err = firstError(json.Unmarshal(in, &i), json.Unmarshal(out, &o))
		op.input, op.output = i, o
	}
	if err != nil {
		return operation{}, fmt.Errorf("input or output of %s %s: %v", rec.Model, rec.Op, err)
	}
	return op, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func firstError(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
