package p2p

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

func FuzzReadMessage(f *testing.F) {
	n := ring.Node{ID: ring.VirtualID("127.0.0.1:4001", 1), Contact: ring.Contact{Peer: "12D3KooW", Addr: "127.0.0.1:4001"}, Index: 1}
	for _, m := range []*ring.Message{
		{Op: ring.OpPing},
		{Op: ring.OpStep, Key: n.ID, Nodes: []ring.Node{n, n}, Owners: []ring.Node{n}},
		{Op: ring.OpNotify, To: n.ID, From: &n},
		{Op: ring.OpLeave, From: &n, Pred: &n, Nodes: []ring.Node{n}, Err: ring.ErrCodeNoVnode},
	} {
		var b bytes.Buffer
		if err := wire.WriteJSON(&b, m); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte("\x05{\"op\""))
	f.Add([]byte("\x10{\"to\":\"zz\"}      "))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := readMessage(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := wire.WriteJSON(&b, m); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		m2, err := readMessage(bufio.NewReader(&b))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		j1, _ := json.Marshal(m)
		j2, _ := json.Marshal(m2)
		if !bytes.Equal(j1, j2) {
			t.Fatalf("round trip changed the message:\n%s\n%s", j1, j2)
		}
	})
}
