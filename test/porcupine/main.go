// porcupine-check: checks recorded histories (JSON lines, docs/testing.md "Recorded histories")
// against sequential models written from the stores' documented semantics, with Porcupine
// (github.com/anishathalye/porcupine): a compare-and-swap register per lease or shard record,
// a fenced register per resource, and Jepsen's lock-protected set.
//
//	porcupine-check [-timeout 60s] [-visualize DIR] HISTORY.jsonl...
//
// Prints one verdict line per model (and per set), and exits 0 when every history is
// linearizable and no acknowledged add was lost; 1 on a violation, with the path of Porcupine's
// visualization of it; 2 on bad input (one line naming the file, the line and the rule); 3 when
// Porcupine ran out of time without a verdict.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

func main() {
	started := time.Now()
	timeout := flag.Duration("timeout", 60*time.Second, "how long Porcupine may search, in all: running out is no verdict (exit 3), never a pass")
	visDir := flag.String("visualize", "", "where to write the visualization of a violation (default: beside the first history)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "porcupine-check: no history given: porcupine-check [-timeout 60s] [-visualize DIR] HISTORY.jsonl...")
		os.Exit(2)
	}
	var history []operation
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "porcupine-check: %v\n", err)
			os.Exit(2)
		}
		h, err := readHistory(f, name)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "porcupine-check: %v\n", err)
			os.Exit(2)
		}
		history = append(history, h...)
	}
	if *visDir == "" {
		*visDir = filepath.Dir(flag.Arg(0))
	}
	if abs, err := filepath.Abs(*visDir); err == nil {
		*visDir = abs
	}

	byModel := map[string][]operation{}
	for _, op := range history {
		byModel[op.model] = append(byModel[op.model], op)
	}
	exit := 0
	// One budget for the whole search: -timeout bounds the run, not each key.
	deadline := time.Now().Add(*timeout)
	for _, name := range []string{"register", "fenced"} {
		ops := byModel[name]
		if len(ops) == 0 {
			continue
		}
		model := registerModel.ToModel()
		if name == "fenced" {
			model = fencedModel.ToModel()
		}
		v := checkModel(model, ops, deadline)
		keys := countKeys(ops)
		stats := fmt.Sprintf("%d keys in %.1f s, the largest %d operations", keys, v.elapsed.Seconds(), v.largest)
		switch v.result {
		case porcupine.Ok:
			fmt.Printf("%s: %d operations on %d keys: linearizable (%s)\n", name, len(ops), keys, stats)
		case porcupine.Unknown:
			fmt.Printf("%s: %d operations on %d keys: NO VERDICT within %s (%d keys judged of %d: %s)\n", name, len(ops), keys, *timeout, v.judged, keys, stats)
			if exit == 0 {
				exit = 3
			}
		default:
			path := filepath.Join(*visDir, fmt.Sprintf("porcupine-%s.html", name))
			if err := porcupine.VisualizePath(model, v.info, path); err != nil {
				fmt.Printf("%s: %d operations on %d keys: NOT linearizable at key %q (the visualization could not be written: %v)\n", name, len(ops), keys, v.failedKey, err)
			} else {
				fmt.Printf("%s: %d operations on %d keys: NOT linearizable at key %q; visualization: %s\n", name, len(ops), keys, v.failedKey, path)
			}
			exit = 1
		}
	}
	sets := map[string][]operation{}
	for _, op := range byModel["set"] {
		sets[op.key] = append(sets[op.key], op)
	}
	var setKeys []string
	for k := range sets {
		setKeys = append(setKeys, k)
	}
	sort.Strings(setKeys)
	for _, k := range setKeys {
		v := checkSet(k, sets[k])
		fmt.Println(v)
		if !v.ok() {
			exit = 1
		}
	}
	if len(history) == 0 {
		fmt.Println("no operations recorded: nothing checked")
		exit = 1
	}
	fmt.Println(resourceUse(started))
	os.Exit(exit)
}

func toPorcupine(ops []operation) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	clients := map[int64]int{}
	for i, op := range ops {
		c, ok := clients[op.process]
		if !ok {
			c = len(clients)
			clients[op.process] = c
		}
		out[i] = porcupine.Operation{ClientId: c, Input: op.input, Call: op.call, Output: op.output, Return: op.ret, Metadata: op.key}
	}
	return out
}

func countKeys(ops []operation) int {
	keys := map[string]bool{}
	for _, op := range ops {
		keys[op.key] = true
	}
	return len(keys)
}
