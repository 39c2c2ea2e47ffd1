package archive_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/archivetest"
)

// TestExportHide: ExportOptions.Hide leaves out a hidden response and
// the revisits that refer to it, and nothing else.
func TestExportHide(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	s := archivetest.TwoDays(t, t0, "http://h.example/a", "http://h.example/b")
	if err := s.Touch(ctx, "http://h.example/a", t0.Add(48*time.Hour)); err != nil { // day 2: unchanged
		t.Fatal(err)
	}
	q := archive.Query{Host: "h.example"}
	all, err := s.Export(ctx, archive.ExportOptions{Query: q, Revisits: true}, io.Discard, nil)
	if err != nil || all.Responses != 4 || all.Revisits != 1 {
		t.Fatalf("without Hide: %+v, %v", all, err)
	}
	day1 := t0.Add(24 * time.Hour)
	hide := func(u string, tm time.Time) bool { return u == "http://h.example/a" && tm.Equal(day1) }
	got, err := s.Export(ctx, archive.ExportOptions{Query: q, Revisits: true, Hide: hide}, io.Discard, nil)
	if err != nil || got.Responses != 3 || got.Revisits != 0 {
		t.Fatalf("with Hide: %+v, %v; want 3 responses, no revisit of the hidden one", got, err)
	}
}
