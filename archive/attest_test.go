package archive

import (
	"context"
	"errors"
	"testing"
)

// TestSignatureCoversAttested: a browser capture is signed in the
// attested form, and a holder can neither strip its marker, nor add the
// marker to a plain fetch, nor pass the attested signature off as the
// block form.
func TestSignatureCoversAttested(t *testing.T) {
	ctx := context.Background()
	signer := newEdSigner(7)
	src := openTest(t, Options{Signer: signer})
	rendered := capture("http://example.org/app", t0, "<div id=app>built by a script</div>")
	rendered.Browser = true
	rv, _ := mustPut(t, src, rendered)
	_, browser, err := src.Get(ctx, rv.URL, rv.Time)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := splitAttested(browser.Signature); !ok || !browser.Browser {
		t.Fatalf("browser capture: marker %v, signature form %d; want the attested form", browser.Browser, browser.Signature[0])
	}
	pv, _ := mustPut(t, src, capture("http://example.org/plain", t0, "fetched"))
	_, plain, err := src.Get(ctx, pv.URL, pv.Time)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := splitSig(plain.Signature); !ok {
		t.Fatalf("plain capture: signature form %d; want the block form", plain.Signature[0])
	}

	stripped := *browser
	stripped.Browser = false
	marked := *plain
	marked.Browser = true
	block, _, raw, _ := splitAttested(browser.Signature)
	downgraded := *browser
	downgraded.Browser = false
	downgraded.Signature = append(append([]byte{sigBlock}, block[:]...), raw...)
	for name, c := range map[string]Capture{"marker stripped": stripped, "marker added": marked, "attested signature as the block form": downgraded} {
		n, data := putFile(t, nil, c)
		dst := openTest(t, Options{Verifier: edVerifier{}})
		if _, added, err := dst.Import(ctx, n, data); !errors.Is(err, ErrUnsigned) || added {
			t.Errorf("%s: import = added %v, %v; want ErrUnsigned", name, added, err)
		}
		if _, _, err := dst.VerifyRecord(data); !errors.Is(err, ErrUnsigned) {
			t.Errorf("%s: verify = %v; want ErrUnsigned", name, err)
		}
	}

	dst := openTest(t, Options{Verifier: edVerifier{}})
	for _, c := range []*Capture{browser, plain} {
		n, data := putFile(t, nil, *c)
		if _, added, err := dst.Import(ctx, n, data); err != nil || !added {
			t.Fatalf("genuine %s: added %v, %v", c.URL, added, err)
		}
		got, _, err := dst.VerifyRecord(data)
		if err != nil || got.Browser != c.Browser {
			t.Errorf("genuine %s: verify = marker %v, %v; want %v", c.URL, got != nil && got.Browser, err, c.Browser)
		}
	}
	if !rv.Browser {
		t.Fatal("Put's version of a browser capture is not marked")
	}
	if err := dst.VerifySigned(rv, browser.Signature); err != nil {
		t.Errorf("a listed browser capture: %v", err)
	}
	listed := pv
	listed.Browser = true
	if err := dst.VerifySigned(listed, plain.Signature); !errors.Is(err, ErrUnsigned) {
		t.Errorf("a fetch listed as a browser capture: %v; want ErrUnsigned", err)
	}
}

// TestRequestHeadSigned: the request head a capture carries is kept in
// its record, covered by the signature, and an altered or stripped one
// is refused; a malformed one is left out by Put.
func TestRequestHeadSigned(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, Options{Signer: newEdSigner(8)})
	c := capture("http://example.org/r", t0, "answered")
	c.Request = []byte("GET /r HTTP/1.1\r\nHost: example.org\r\nIf-None-Match: \"v1\"\r\n\r\n")
	v, _ := mustPut(t, src, c)
	_, got, err := src.Get(ctx, v.URL, v.Time)
	if err != nil || string(got.Request) != string(c.Request) {
		t.Fatalf("request head read back %q, %v; want %q", got.Request, err, c.Request)
	}
	altered := *got
	altered.Request = []byte("GET /r HTTP/1.1\r\nHost: example.org\r\n\r\n")
	stripped := *got
	stripped.Request = nil
	for name, bad := range map[string]Capture{"altered": altered, "stripped": stripped} {
		n, data := putFile(t, nil, bad)
		dst := openTest(t, Options{Verifier: edVerifier{}})
		if _, added, err := dst.Import(ctx, n, data); !errors.Is(err, ErrUnsigned) || added {
			t.Errorf("%s request head: import = added %v, %v; want ErrUnsigned", name, added, err)
		}
	}
	n, data := putFile(t, nil, *got)
	if _, added, err := openTest(t, Options{Verifier: edVerifier{}}).Import(ctx, n, data); err != nil || !added {
		t.Errorf("genuine: added %v, %v", added, err)
	}
	bad := capture("http://example.org/s", t0, "answered")
	bad.Request = []byte("not a request")
	v, _ = mustPut(t, src, bad)
	if _, got, err := src.Get(ctx, v.URL, v.Time); err != nil || got.Request != nil {
		t.Errorf("malformed request head: read back %q, %v; want none", got.Request, err)
	}
}
