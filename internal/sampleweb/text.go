package sampleweb

import (
	"math"
	"math/rand/v2"
	"strings"
)

// Every random choice in the web is drawn from a generator seeded by mix of
// the web's seed and a few integers that name the choice (host, page, day,
// purpose), so any part of the web can be computed on its own, in any order,
// with the same result.

// Purpose tags keep the streams of different choices apart.
const (
	tagVocab uint64 = iota + 1
	tagLinks
	tagText
	tagNews
	tagChange
	tagParent
	tagParentDeath
	tagImage
	tagAsset
	tagSearch
	tagTitle
)

// mix hashes seed and parts into one 64-bit value (splitmix64 finalizer
// applied after each part).
func mix(seed int64, parts ...uint64) uint64 {
	x := uint64(seed) ^ 0x9e3779b97f4a7c15
	for _, p := range parts {
		x ^= p + 0x9e3779b97f4a7c15 + (x << 6) + (x >> 2)
		x = splitmix(x)
	}
	return splitmix(x)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// rng returns a deterministic generator for the choice named by parts.
func rng(seed int64, parts ...uint64) *rand.Rand {
	h := mix(seed, parts...)
	return rand.New(rand.NewPCG(h, splitmix(h)))
}

// unit maps a hash to a float in (0, 1].
func unit(h uint64) float64 {
	return (float64(h>>11) + 1) / (1 << 53)
}

// vocabulary is a deterministic list of made-up words. Text draws from it
// with a Zipf distribution, as natural language does, so compression ratios
// resemble those of real pages.
type vocabulary struct {
	words []string
	// Walker's alias table for drawing words by Zipf frequency in O(1).
	prob  []float64
	alias []int
}

var syllables = []string{
	"ka", "lo", "mi", "ten", "ra", "vel", "do", "sun", "ber", "tis", "on", "gar",
	"pe", "lin", "qua", "sto", "re", "mon", "fa", "dri", "el", "nu", "vos", "hap",
	"ci", "tor", "ul", "bra", "zen", "ox", "ma", "ri", "ste", "pho", "grim", "al",
	"de", "ny", "cro", "wa", "the", "is", "and", "or", "ing", "est", "ly", "ment",
}

const vocabSize = 4000

func newVocabulary(seed int64) *vocabulary {
	r := rng(seed, tagVocab)
	seen := make(map[string]bool, vocabSize)
	v := &vocabulary{words: make([]string, 0, vocabSize)}
	// Short common words first: Zipf rank 0 is the most frequent.
	for _, w := range []string{"the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "on", "by", "at"} {
		seen[w] = true
		v.words = append(v.words, w)
	}
	for len(v.words) < vocabSize {
		n := 1 + r.IntN(3)
		if len(v.words) > 400 {
			n = 2 + r.IntN(3)
		}
		var b strings.Builder
		for range n {
			b.WriteString(syllables[r.IntN(len(syllables))])
		}
		w := b.String()
		if !seen[w] {
			seen[w] = true
			v.words = append(v.words, w)
		}
	}
	v.prob, v.alias = aliasTable(len(v.words), func(i int) float64 { return math.Pow(float64(i+2), -1.07) })
	return v
}

// aliasTable builds Walker's alias table for n outcomes of weight w(i).
func aliasTable(n int, w func(int) float64) ([]float64, []int) {
	prob, alias := make([]float64, n), make([]int, n)
	total := 0.0
	for i := range n {
		prob[i] = w(i)
		total += prob[i]
	}
	var small, large []int
	for i := range prob {
		prob[i] *= float64(n) / total
		if prob[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		alias[s] = l
		prob[l] -= 1 - prob[s]
		if prob[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range append(small, large...) {
		prob[i], alias[i] = 1, i
	}
	return prob, alias
}

// word draws one word by its Zipf frequency.
func (v *vocabulary) word(r *rand.Rand) string {
	i := r.IntN(len(v.words))
	if r.Float64() >= v.prob[i] {
		i = v.alias[i]
	}
	return v.words[i]
}

// paragraph appends about n words to b, in sentences, drawn by r.
func (v *vocabulary) paragraph(b *strings.Builder, r *rand.Rand, n int) {
	start := true
	for i := range n {
		w := v.word(r)
		if start {
			b.WriteString(strings.ToUpper(w[:1]))
			b.WriteString(w[1:])
			start = false
		} else {
			b.WriteString(w)
		}
		switch {
		case i == n-1:
			b.WriteString(".")
		case r.IntN(12) == 0:
			b.WriteString(". ")
			start = true
		case r.IntN(15) == 0:
			b.WriteString(", ")
		default:
			b.WriteByte(' ')
		}
	}
}

// phrase returns n words drawn uniformly from the less common part of the
// vocabulary, for titles and anchor texts.
func (v *vocabulary) phrase(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = v.words[16+r.IntN(len(v.words)-16)]
	}
	return strings.Join(ws, " ")
}
