package synth

// The lexicon: every user-facing value of the benchmark with its translation
// in the five languages, in the order of Langs (en, es, fr, it, nl). The
// values are the files under lexicon/ (see tables.go).
//
// Free-form categories hold what users say in their own words (reminder
// texts, dishes, message texts, ...). Paper 000's translation protocol (App.
// G) localizes those, so a gold value is the entry in the record's language.
// Every free-form translation differs from its English form, so an English
// value written for a non-English user is always detectable (ALM). Named
// entities (cities, currencies) follow the API's description; enum values
// are stored untranslated, whatever word the user said.

// Langs are the benchmark's languages, in lexicon column order.
var Langs = []string{"en", "es", "fr", "it", "nl"}

// langIndex maps a language code to its lexicon column (-1 if unknown).
func langIndex(lang string) int {
	for i, l := range Langs {
		if l == lang {
			return i
		}
	}
	return -1
}

// Entry is one lexicon value. Key is what an enum or code-valued argument
// stores (the enum value); for free-form values and names it is the English
// form. T holds the surface form in each language of Langs.
type Entry struct {
	Key string
	T   [5]string
}
