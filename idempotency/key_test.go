package idempotency_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/unherd/unherd/idempotency"
)

func TestParseKey(t *testing.T) {
	long := strings.Repeat("k", idempotency.MaxKeyLength)
	cases := []struct {
		name  string
		in    string
		bare  bool
		want  string
		wantE bool
	}{
		{"sf string", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, false, "8e03978e-40d5-43e8-bc93-6894a57f9324", false},
		{"surrounding spaces", `  "abc"  `, false, "abc", false},
		{"escapes", `"a\"b\\c"`, false, `a"b\c`, false},
		{"spaces inside", `"a b"`, false, "a b", false},
		{"parameters ignored", `"abc";v=1;x;y="z";d=1.5;t=tok/1:2;b=:AQID:;f=?0;dt=@1659578233;ds=%"f%c3%bc"`, false, "abc", false},
		{"255 bytes", `"` + long + `"`, false, long, false},
		{"256 bytes", `"` + long + `k"`, false, "", true},
		{"empty string", `""`, false, "", true},
		{"empty header", ``, false, "", true},
		{"only spaces", `   `, true, "", true},
		{"unterminated", `"abc`, false, "", true},
		{"bad escape", `"a\nb"`, false, "", true},
		{"control byte", "\"a\tb\"", false, "", true},
		{"non-ascii", `"ü"`, false, "", true},
		{"two lines joined", `"a", "b"`, false, "", true},
		{"trailing garbage", `"a"b`, false, "", true},
		{"bad parameter key", `"a";Upper=1`, false, "", true},
		{"bad parameter value", `"a";k=(1)`, false, "", true},
		{"integer too long", `"a";k=1234567890123456`, false, "", true},
		{"decimal with 4 places", `"a";k=1.2345`, false, "", true},
		{"date with fraction", `"a";k=@1.5`, false, "", true},
		{"bad boolean", `"a";k=?2`, false, "", true},
		{"bad percent", `"a";k=%"%zz"`, false, "", true},
		{"bare refused when strict", `abc-123`, false, "", true},
		{"bare uuid", `8e03978e-40d5-43e8-bc93-6894a57f9324`, true, "8e03978e-40d5-43e8-bc93-6894a57f9324", false},
		{"bare trimmed", ` abc `, true, "abc", false},
		{"bare with comma", `a,b`, true, "", true},
		{"bare with space", `a b`, true, "", true},
		{"bare too long", long + "k", true, "", true},
		{"quoted when bare allowed", `"abc"`, true, "abc", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := idempotency.ParseKey(tc.in, tc.bare)
			if tc.wantE {
				if !errors.Is(err, idempotency.ErrMalformedKey) {
					t.Fatalf("ParseKey(%q) = %q, %v; want an error wrapping ErrMalformedKey", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseKey(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzParseKey checks that any accepted key is 1 to 255 printable ASCII
// bytes and that it survives quoting and parsing again unchanged.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, `"k";p=1`, `abc`, `"`, `"a";x=%"%c3"`, `"a";b=:AA==:`, `"a";n=-1.25`} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, in string, bare bool) {
		key, err := idempotency.ParseKey(in, bare)
		if err != nil {
			if !errors.Is(err, idempotency.ErrMalformedKey) {
				t.Fatalf("error %v does not wrap ErrMalformedKey", err)
			}
			return
		}
		if len(key) == 0 || len(key) > idempotency.MaxKeyLength {
			t.Fatalf("accepted a key of %d bytes", len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("accepted byte %#x", key[i])
			}
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		again, err := idempotency.ParseKey(quoted, false)
		if err != nil || again != key {
			t.Fatalf("re-parsing %q: %q, %v", quoted, again, err)
		}
	})
}

// Two different callers' keys never share a stored key, whether or not
// a principal scopes them.
func FuzzStoreKeyInjective(f *testing.F) {
	f.Add("alice", true, "xcc1", "", false, "5:alicexcc1")
	f.Add("alice", true, "xcc1", "", false, "p5:alicexcc1")
	f.Add("alic", true, "exc", "alice", true, "xc")
	f.Add("", true, "k", "", false, "k")
	f.Fuzz(func(t *testing.T, p1 string, s1 bool, k1, p2 string, s2 bool, k2 string) {
		if !s1 {
			p1 = ""
		}
		if !s2 {
			p2 = ""
		}
		same := p1 == p2 && s1 == s2 && k1 == k2
		if a, b := idempotency.StoreKey(p1, s1, k1), idempotency.StoreKey(p2, s2, k2); (a == b) != same {
			t.Errorf("StoreKey(%q, %v, %q) = %q and StoreKey(%q, %v, %q) = %q", p1, s1, k1, a, p2, s2, k2, b)
		}
	})
}

func TestStorableHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Content-Type": true, "Location": true, "ETag": true, "WWW-Authenticate": true, "Retry-After": true,
		"Set-Cookie": false, "set-cookie": false, "Authorization": false, "Proxy-Authorization": false,
		"X-Auth-Token": false, "X-Api-Key": false, "X-Session-Id": false, "X-Client-Secret": false,
		"Connection": false, "Transfer-Encoding": false, "Content-Length": false, "Date": false,
	} {
		if got := idempotency.StorableHeader(name); got != want {
			t.Errorf("StorableHeader(%q) = %v, want %v", name, got, want)
		}
	}
}
