package search

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestAnalyze(t *testing.T) {
	got := Terms("The Archivists' ARCHIVES, archiving the web's pages!")
	want := []string{"archivist", "archiv", "web", "page"}
	if !slices.Equal(got, want) {
		t.Errorf("Terms = %q, want %q", got, want)
	}
}

func TestParse(t *testing.T) {
	p, err := Parse(`history "war of the worlds" site:Example.org radio`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"histori", "war", "world", "radio"}; !slices.Equal(p.Terms, want) {
		t.Errorf("terms %q, want %q", p.Terms, want)
	}
	if len(p.Phrases) != 1 || p.Phrases[0][0].Term != "war" || p.Phrases[0][1].Pos-p.Phrases[0][0].Pos != 3 {
		t.Errorf("phrases %+v", p.Phrases)
	}
	if p.Site != "example.org" {
		t.Errorf("site %q", p.Site)
	}
	for _, q := range []string{"", "the of and", "site:a.example"} {
		if _, err := Parse(q); !errors.Is(err, ErrEmptyQuery) {
			t.Errorf("Parse(%q) = %v, want ErrEmptyQuery", q, err)
		}
	}
	if _, err := Parse(strings.Repeat("word", 1) + " a1 b2 c3 d4 e5 f6 g7 h8 i9"); err == nil {
		t.Error("Parse of ten words: no error")
	}
}

func TestHasPhrase(t *testing.T) {
	doc := Analyze("Orson Welles read The War of the Worlds on the radio; worlds at war.")
	for q, want := range map[string]bool{
		"war of the worlds": true,
		"worlds war":        false,
		"worlds at war":     true,
		"radio welles":      false,
	} {
		if got := hasPhrase(doc, Analyze(q)); got != want {
			t.Errorf("%q: %v, want %v", q, got, want)
		}
	}
}

func TestSnippet(t *testing.T) {
	text := "Intro <b>text</b> here. " + strings.Repeat("filler ", 40) + "The archive keeps every version of the page."
	s := Snippet(text, Analyze(text), Terms("archive versions"))
	if !strings.Contains(s, "<mark>archive</mark>") || !strings.Contains(s, "<mark>version</mark>") || !strings.HasPrefix(s, "… ") {
		t.Errorf("snippet %q", s)
	}
	if s := Snippet(text, Analyze(text), Terms("intro")); !strings.Contains(s, "&lt;b&gt;") || strings.HasPrefix(s, "…") {
		t.Errorf("snippet at the start %q: not escaped or cut", s)
	}
}
