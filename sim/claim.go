package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Claim sets what a published source says beside what this run
// measured, and whether the measurement agrees: the scenarios report
// their claims in Result.Claims.
type Claim struct {
	// Source names the publication the claim comes from, with its
	// authors, year and address.
	Source string `json:"source"`
	// Claim is what the source says, in one sentence, with its figures.
	Claim string `json:"claim"`
	// Measured is what this run measured for the same quantities, in
	// words and numbers.
	Measured string `json:"measured"`
	// Holds reports whether the measurement agrees with the claim; over
	// several seeds ([RunSeeds]), whether it agrees on every one.
	Holds bool `json:"holds"`
	// Figures are the numbers in Measured, in order: over several seeds,
	// each seed's median with the range. Empty for a claim whose text is
	// not built from figures.
	Figures []Figure `json:"figures,omitempty"`
	// Seeds are the seeds the claim was judged on ([RunSeeds]), and
	// Differs those on which it does not hold; both empty for one run.
	Seeds   []uint64 `json:"seeds,omitempty"`
	Differs []uint64 `json:"differs,omitempty"`
	// Pooled says the verdict rests on the samples of all Seeds pooled,
	// because one seed's are too few for the percentile judged; Differs
	// then lists the seeds whose own samples disagree.
	Pooled bool `json:"pooled,omitempty"`
	// format is Measured with a verb for each figure, for re-rendering.
	format string
}

// Figure is one number a claim's verdict rests on: on one seed its value;
// over several seeds the median, with the least and the greatest value
// any seed gave. Claim.Measured prints it as "259 [240-281]": the value
// and, when the seeds disagree, the range.
type Figure struct {
	Value float64 `json:"value"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	// seeds holds every seed's value once merged, for the median.
	seeds []float64
}

// figureText prints a Figure in a claim's Measured text.
type figureText Figure

// Format prints the value with the verb's precision and, when the seeds
// disagree, the range after it: "259 [240-281]".
func (f figureText) Format(s fmt.State, verb rune) {
	p, ok := s.Precision()
	if !ok {
		p = -1
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', p, 64) }
	fmt.Fprint(s, num(f.Value))
	if lo, hi := num(f.Min), num(f.Max); lo != hi {
		fmt.Fprintf(s, " [%s-%s]", lo, hi)
	}
}

// newClaim builds a Claim of source's claim text, holding or not, whose
// Measured text is format with the figures in place of its verbs (one %f
// verb, with any precision, per figure), so that merging the claim over
// seeds (mergeClaims) can print each figure's spread.
func newClaim(source, text string, holds bool, format string, figures ...float64) Claim {
	c := Claim{Source: source, Claim: text, Holds: holds, format: format}
	for _, v := range figures {
		c.Figures = append(c.Figures, Figure{Value: v, Min: v, Max: v, seeds: []float64{v}})
	}
	c.Measured = c.render()
	return c
}

func (c *Claim) render() string {
	args := make([]any, len(c.Figures))
	for i, f := range c.Figures {
		args[i] = figureText(f)
	}
	return fmt.Sprintf(c.format, args...)
}

// mergeClaims merges one claim's verdicts on seeds, per[k] judged on seeds[k]:
// it holds only if it holds on every seed, and Differs lists the seeds on
// which it does not; its figures are medians with the range over the
// seeds (for a claim built without figures, the numbers of its text,
// when the seeds' texts agree otherwise).
func mergeClaims(seeds []uint64, per []Claim) Claim {
	c := per[0]
	c.Seeds = seeds
	c.Differs = nil
	for k, pc := range per {
		if !pc.Holds {
			c.Differs = append(c.Differs, seeds[k])
		}
	}
	c.Holds = len(c.Differs) == 0
	structured := c.format != ""
	for _, pc := range per {
		structured = structured && len(pc.Figures) == len(c.Figures)
	}
	if structured {
		c.Figures = make([]Figure, len(per[0].Figures))
		for j := range c.Figures {
			vals := make([]float64, len(per))
			for k, pc := range per {
				vals[k] = pc.Figures[j].Value
			}
			c.Figures[j] = Figure{Value: median(vals), Min: slices.Min(vals), Max: slices.Max(vals), seeds: vals}
		}
		c.Measured = c.render()
	} else if m, ok := mergeText(per); ok {
		c.Measured = m
	} else {
		c.Measured = fmt.Sprintf("seed %d: %s", seeds[0], c.Measured)
	}
	return c
}

// replaceNumbers returns s with each figure in it replaced by
// f(figure), left to right. A figure is ASCII digits, perhaps with a
// fraction ("12", "0.25"); it has no sign, since a hyphen in "1-5"
// separates. (A scanner, not a regexp: the page's simulator, which links
// this package, starts in several workers at once, and a regexp would
// bring the regexp package and unicode's tables into each one's start.)
func replaceNumbers(s string, f func(figure string) string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
			j += 2
			for j < len(s) && isDigit(s[j]) {
				j++
			}
		}
		b.WriteString(s[last:i])
		b.WriteString(f(s[i:j]))
		last, i = j, j
	}
	b.WriteString(s[last:])
	return b.String()
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// mergeText merges the Measured texts of a claim built without figures:
// when every seed's text is the same but for its numbers, each number
// becomes the median over the seeds with their range, in the first
// seed's precision. It reports false when the texts differ otherwise.
func mergeText(per []Claim) (string, bool) {
	nums := make([][]string, len(per))
	skeletonOf := func(k int) string {
		return replaceNumbers(per[k].Measured, func(tok string) string {
			nums[k] = append(nums[k], tok)
			return "\x00"
		})
	}
	skeleton := skeletonOf(0)
	for k := 1; k < len(per); k++ {
		if skeletonOf(k) != skeleton {
			return "", false
		}
	}
	i := 0
	return replaceNumbers(per[0].Measured, func(tok string) string {
		prec := 0
		if dot := strings.IndexByte(tok, '.'); dot >= 0 {
			prec = len(tok) - dot - 1
		}
		vals := make([]float64, len(per))
		for k := range per {
			vals[k], _ = strconv.ParseFloat(nums[k][i], 64)
		}
		i++
		return fmt.Sprintf("%.*f", prec, figureText{Value: median(vals), Min: slices.Min(vals), Max: slices.Max(vals)})
	}), true
}

// median is the middle value of vs, or the mean of the middle two; 0 for
// none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
