// The KEP-5866 reference for leasehold's key-to-shard test (test/kubernetes/kep-5866-vectors.test.ts):
// it reads keys and shard counts as JSON on stdin and answers, as JSON on stdout, what
// Kubernetes' own code says of them. Built by test/support/build-kep-5866-vectors.sh into the cache,
// never committed.
//
// What comes from which code, so that a reader knows what the test proves:
//   - the hash of each key: k8s.io/apimachinery/pkg/sharding.HashField (FNV-1a 64 of the bytes);
//   - the comparison of a hash with a bound: apimachinery's sharding.HexLess, on the hex strings
//     the API server compares;
//   - a selector string: parsed by the API server's own parser (k8s.io/apiserver/pkg/sharding.Parse),
//     which refuses a bound not written as it expects, and matched against an object whose
//     metadata.uid is the key by apimachinery's Selector.Matches, the filter the API server runs;
//   - the bounds floor(i * 2^64 / N): computed here with math/big, from the KEP's rule. No released
//     apimachinery (v0.37.2 checked) has a function that splits the hash space into N ranges: its
//     sharding package has the hash, the comparison and the selector, not the split.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	apiserversharding "k8s.io/apiserver/pkg/sharding"
)

type selectorCase struct {
	N         int      `json:"n"`
	Selectors []string `json:"selectors"` // leasehold's shardSelector(s, N), s = 0..N-1
	Shards    []int    `json:"shards"`    // leasehold's shardOf(key, N), one per key
}

// A member's owned shards and leasehold's one selector for them (ownedShardsSelector).
type ownedCase struct {
	N        int    `json:"n"`
	Owned    []int  `json:"owned"`
	Selector string `json:"selector"`
	Shards   []int  `json:"shards"` // leasehold's shardOf(key, N), one per key
}

type request struct {
	Owned     []ownedCase    `json:"owned"`
	All       int            `json:"all"` // the bounds of every N in 1..All, as digests
	Keys      []string       `json:"keys"`
	Wide      []int          `json:"wide"`
	Selectors []selectorCase `json:"selectors"`
}

type response struct {
	Modules          []string         `json:"modules"`
	Hashes           []string         `json:"hashes"`
	BoundsDigests    []string         `json:"boundsDigests"` // N = 1..All: sha256 of the bounds joined by "\n"
	Bounds           map[int][]string `json:"bounds"`
	BoundaryShards   map[int][]int    `json:"boundaryShards"`
	KeyShards        map[int][]int    `json:"keyShards"`
	SelectorsParsed  int              `json:"selectorsParsed"`
	MatchesChecked   int              `json:"matchesChecked"`
	SelectorFailures []string         `json:"selectorFailures"`
}

var two64 = new(big.Int).Lsh(big.NewInt(1), 64)

// bounds returns floor(i * 2^64 / n) for i = 0..n as the API server writes them.
func bounds(n int) []string {
	out := make([]string, n+1)
	for i := 0; i <= n; i++ {
		b := new(big.Int).Mul(big.NewInt(int64(i)), two64)
		b.Quo(b, big.NewInt(int64(n)))
		out[i] = hexBound(b)
	}
	return out
}

func hexBound(b *big.Int) string {
	if b.Cmp(two64) == 0 {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", b)
}

// shardOfHex is the i with bound[i] <= h < bound[i+1], by apimachinery's comparison.
func shardOfHex(h string, bound []string) int {
	n := len(bound) - 1
	return sort.Search(n, func(i int) bool { return apisharding.HexLess(h, bound[i+1]) })
}

func fail(res *response, format string, args ...any) {
	if len(res.SelectorFailures) < 20 {
		res.SelectorFailures = append(res.SelectorFailures, fmt.Sprintf(format, args...))
	}
}

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "kep-5866-vectors: stdin is not the request JSON:", err)
		os.Exit(2)
	}
	res := response{Bounds: map[int][]string{}, BoundaryShards: map[int][]int{}, KeyShards: map[int][]int{}, SelectorFailures: []string{}}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			res.Modules = append(res.Modules, m.Path+" "+m.Version)
		}
	}
	hashes := make([]string, len(req.Keys))
	for i, k := range req.Keys {
		hashes[i] = "0x" + apisharding.HashField(k)
	}
	res.Hashes = hashes

	for n := 1; n <= req.All; n++ {
		sum := sha256.Sum256([]byte(strings.Join(bounds(n), "\n")))
		res.BoundsDigests = append(res.BoundsDigests, hex.EncodeToString(sum[:]))
	}

	for _, n := range req.Wide {
		bound := bounds(n)
		res.Bounds[n] = bound
		// Each inner bound and the hash just below it: where a rule off by one puts a hash in the wrong shard.
		edge := make([]int, 0, 2*(n-1))
		for i := 1; i < n; i++ {
			b, _ := new(big.Int).SetString(bound[i][2:], 16)
			below := hexBound(new(big.Int).Sub(b, big.NewInt(1)))
			edge = append(edge, shardOfHex(below, bound), shardOfHex(bound[i], bound))
		}
		res.BoundaryShards[n] = edge
		shards := make([]int, len(hashes))
		for j, h := range hashes {
			shards[j] = shardOfHex(h, bound)
		}
		res.KeyShards[n] = shards
	}

	for _, c := range req.Selectors {
		if len(c.Selectors) != c.N || len(c.Shards) != len(req.Keys) {
			fail(&res, "N = %d: %d selectors and %d shards sent, want %d and %d", c.N, len(c.Selectors), len(c.Shards), c.N, len(req.Keys))
			continue
		}
		bound := bounds(c.N)
		parsed := make([]apisharding.Selector, c.N)
		for s, text := range c.Selectors {
			sel, err := apiserversharding.Parse(text)
			res.SelectorsParsed++
			if err != nil {
				fail(&res, "N = %d, shard %d: the API server's parser refuses %q: %v", c.N, s, text, err)
				continue
			}
			if sel.String() != text {
				fail(&res, "N = %d, shard %d: %q reads back as %q", c.N, s, text, sel.String())
			}
			reqs := sel.Requirements()
			if len(reqs) != 1 || reqs[0].Key != "object.metadata.uid" || reqs[0].Start != bound[s] || reqs[0].End != bound[s+1] {
				fail(&res, "N = %d, shard %d: %q, want shardRange(object.metadata.uid, '%s', '%s')", c.N, s, text, bound[s], bound[s+1])
			}
			parsed[s] = sel
		}
		for j, key := range req.Keys {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: types.UID(key)}}
			s := c.Shards[j]
			// The claimed shard's selector matches; its neighbours' do not (the ranges tile, checked above).
			for _, t := range []int{s - 1, s, s + 1} {
				if t < 0 || t >= c.N || parsed[t] == nil {
					continue
				}
				ok, err := parsed[t].Matches(obj)
				res.MatchesChecked++
				if err != nil || ok != (t == s) {
					fail(&res, "N = %d, key %q (hash %s), leasehold says shard %d: shard %d's selector matches = %v (%v)", c.N, key, hashes[j], s, t, ok, err)
				}
			}
		}
	}
	for _, c := range req.Owned {
		sel, err := apiserversharding.Parse(c.Selector)
		res.SelectorsParsed++
		if err != nil {
			fail(&res, "N = %d, owned %v: the API server's parser refuses %q: %v", c.N, c.Owned, c.Selector, err)
			continue
		}
		owned := map[int]bool{}
		for _, s := range c.Owned {
			owned[s] = true
		}
		// The selector matches a key exactly when the key's shard (checked above) is owned.
		for j, key := range req.Keys {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: types.UID(key)}}
			ok, err := sel.Matches(obj)
			res.MatchesChecked++
			if err != nil || ok != owned[c.Shards[j]] {
				fail(&res, "N = %d, owned %v, key %q in shard %d: %q matches = %v (%v)", c.N, c.Owned, key, c.Shards[j], c.Selector, ok, err)
			}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(&res); err != nil {
		fmt.Fprintln(os.Stderr, "kep-5866-vectors:", err)
		os.Exit(1)
	}
}
