package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestImportNeedsToken: POST /api/import takes the admin token, refuses
// other sites, streams the records not imported then the report, and
// says why an import stopped.
func TestImportNeedsToken(t *testing.T) {
	const token = "s3cret"
	var got []string
	s := newServer(t, newFake(), func(c *Config) {
		c.AdminToken = token
		c.Import = func(_ context.Context, name string, body io.Reader, emit func(any)) (any, error) {
			b, _ := io.ReadAll(body)
			got = append(got, name+"="+string(b))
			if string(b) == "broken" {
				return nil, errors.New("disk full")
			}
			emit(ImportLine{Where: "offset 7", ID: "<urn:uuid:x>", Error: "damaged"})
			return map[string]int{"added": 3}, nil
		}
	})
	post := func(body string, hdr ...string) (int, string) {
		r := httptest.NewRequest(http.MethodPost, uiOrigin+"/api/import?name=dir/a.warc.gz", strings.NewReader(body))
		r.RemoteAddr = "127.0.0.1:5555"
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	bearer := "Bearer " + token
	for _, tc := range []struct {
		name, body string
		hdr        []string
		want       int
		reply      string
	}{
		{"no token", "WARC", nil, http.StatusUnauthorized, ""},
		{"token, from another site", "WARC", []string{"Authorization", bearer, "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, ""},
		{"token (herod import)", "WARC", []string{"Authorization", bearer},
			http.StatusOK, "{\"where\":\"offset 7\",\"id\":\"<urn:uuid:x>\",\"error\":\"damaged\"}\n{\"report\":{\"added\":3}}\n"},
		{"token, the import fails", "broken", []string{"Authorization", bearer}, http.StatusInternalServerError, "disk full"},
	} {
		code, body := post(tc.body, tc.hdr...)
		if code != tc.want || !strings.Contains(body, tc.reply) {
			t.Errorf("%s: %d %q, want %d %q", tc.name, code, body, tc.want, tc.reply)
		}
	}
	if strings.Join(got, ",") != "a.warc.gz=WARC,a.warc.gz=broken" {
		t.Errorf("imported %q, want the two accepted requests' files by their base names", got)
	}
	s = newServer(t, newFake(), func(c *Config) { c.AdminToken = token })
	if code, _ := post("WARC", "Authorization", bearer); code != http.StatusNotFound {
		t.Errorf("without Config.Import: %d, want 404", code)
	}
}
