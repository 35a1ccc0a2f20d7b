package tokenizer

// Byte-level BPE over one pre-tokenized word.
//
// A word starts as one symbol per byte. The adjacent pair with the lowest
// merge rank is merged, leftmost first on ties, until no pair has a rank.
// Short words rescan a rank array; long ones (runs of spaces, minified code)
// use a heap over a linked list so the cost stays O(n log n). Both give the
// order of Hugging Face's heap: (rank, position) ascending.

import (
	"container/heap"
	"math"
	"sync"
)

// merge is the result of merging one pair.
type merge struct {
	rank int32
	id   int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// heapThreshold is the word length (bytes) above which bpe uses the heap.
var heapThreshold = 64

const (
	cacheMaxWord    = 128     // longer words are not cached
	cacheMaxEntries = 1 << 17 // the cache is cleared when it grows past this
)

type bpe struct {
	vocab        map[string]int32 // raw bytes of a token -> id
	merges       map[uint64]merge
	byteID       [256]int32
	ignoreMerges bool // Llama-3: a word found whole in the vocab is one token

	mu    sync.RWMutex
	cache map[string][]int32
}

// word appends the ids of w to out.
func (m *bpe) word(w string, out []int32) []int32 {
	if m.ignoreMerges {
		if id, ok := m.vocab[w]; ok {
			return append(out, id)
		}
	}
	if len(w) == 1 {
		return append(out, m.byteID[w[0]])
	}
	if len(w) <= cacheMaxWord {
		m.mu.RLock()
		ids, ok := m.cache[w]
		m.mu.RUnlock()
		if ok {
			return append(out, ids...)
		}
	}
	start := len(out)
	if len(w) <= heapThreshold && len(w) <= heapThresholdMax {
		out = m.mergeSmall(w, out)
	} else {
		out = m.mergeHeap(w, out)
	}
	if len(w) <= cacheMaxWord {
		ids := append([]int32(nil), out[start:]...)
		m.mu.Lock()
		if len(m.cache) >= cacheMaxEntries {
			m.cache = make(map[string][]int32)
		}
		m.cache[w] = ids
		m.mu.Unlock()
	}
	return out
}

// rankOf returns the merge of (a, b), or rank MaxInt32 when there is none.
func (m *bpe) rankOf(a, b int32) merge {
	if mg, ok := m.merges[pairKey(a, b)]; ok {
		return mg
	}
	return merge{rank: math.MaxInt32, id: -1}
}

// mergeSmall works in place on out[start:], keeping ranks[k] for pair (k, k+1).
func (m *bpe) mergeSmall(w string, out []int32) []int32 {
	start := len(out)
	for i := 0; i < len(w); i++ {
		out = append(out, m.byteID[w[i]])
	}
	sym := out[start:]
	var buf [heapThresholdMax]merge
	ranks := buf[:len(sym)-1]
	for k := range ranks {
		ranks[k] = m.rankOf(sym[k], sym[k+1])
	}
	for len(sym) > 1 {
		best := -1
		bestRank := int32(math.MaxInt32)
		for k, r := range ranks {
			if r.rank < bestRank {
				best, bestRank = k, r.rank
			}
		}
		if best < 0 {
			break
		}
		sym[best] = ranks[best].id
		copy(sym[best+1:], sym[best+2:])
		sym = sym[:len(sym)-1]
		copy(ranks[best:], ranks[best+1:])
		ranks = ranks[:len(ranks)-1]
		if best > 0 {
			ranks[best-1] = m.rankOf(sym[best-1], sym[best])
		}
		if best < len(ranks) {
			ranks[best] = m.rankOf(sym[best], sym[best+1])
		}
	}
	return out[:start+len(sym)]
}

// heapThresholdMax bounds heapThreshold (the size of mergeSmall's stack buffer).
const heapThresholdMax = 256

type pairEntry struct {
	rank int32
	pos  int32 // index of the left symbol
	id   int32 // merged id
}

type pairHeap []pairEntry

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairEntry)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeHeap merges with a heap of candidate pairs over a doubly linked list.
// An entry is stale when its pair is no longer adjacent; since each rank
// names one pair, "the pair at pos still has this rank" detects that.
func (m *bpe) mergeHeap(w string, out []int32) []int32 {
	n := len(w)
	id := make([]int32, n)
	prev := make([]int32, n)
	next := make([]int32, n)
	for i := 0; i < n; i++ {
		id[i] = m.byteID[w[i]]
		prev[i] = int32(i - 1)
		next[i] = int32(i + 1)
	}
	next[n-1] = -1
	h := make(pairHeap, 0, n)
	for i := 0; i+1 < n; i++ {
		if mg := m.rankOf(id[i], id[i+1]); mg.id >= 0 {
			h = append(h, pairEntry{mg.rank, int32(i), mg.id})
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		e := heap.Pop(&h).(pairEntry)
		r := next[e.pos]
		if id[e.pos] < 0 || r < 0 || m.rankOf(id[e.pos], id[r]).rank != e.rank {
			continue
		}
		id[e.pos] = e.id
		id[r] = -1 // dead
		next[e.pos] = next[r]
		if next[r] >= 0 {
			prev[next[r]] = e.pos
		}
		if p := prev[e.pos]; p >= 0 {
			if mg := m.rankOf(id[p], id[e.pos]); mg.id >= 0 {
				heap.Push(&h, pairEntry{mg.rank, p, mg.id})
			}
		}
		if q := next[e.pos]; q >= 0 {
			if mg := m.rankOf(id[e.pos], id[q]); mg.id >= 0 {
				heap.Push(&h, pairEntry{mg.rank, e.pos, mg.id})
			}
		}
	}
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, id[i])
	}
	return out
}
