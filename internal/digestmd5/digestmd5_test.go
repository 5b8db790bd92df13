package digestmd5

import (
	"errors"
	"testing"
)

// The exchange kazoo (pure-sasl) had with Debian's ZooKeeper 3.8.0 for jaasuser/secret (recorded on the wire).
const (
	realNonce     = "MveAvLuaKIrUg94j5UF1uu0az1nFQ7W4nniE5Jfq"
	realResponse  = `qop=auth,realm="zk-sasl-md5",username="jaasuser",nonce="MveAvLuaKIrUg94j5UF1uu0az1nFQ7W4nniE5Jfq",cnonce="10484414850753843",nc=00000001,digest-uri="zookeeper/zk-sasl-md5",response=a1a03980d9d390dee85bc339e8c8ad9f`
	realChallenge = `realm="zk-sasl-md5",nonce="MveAvLuaKIrUg94j5UF1uu0az1nFQ7W4nniE5Jfq",charset=utf-8,algorithm=md5-sess`
	realRspauth   = "rspauth=3a64f7a7e826077580ad000340408e58"
)

func users(m map[string]string) PasswordFunc {
	return func(u string) (string, bool) { pw, ok := m[u]; return pw, ok }
}

// TestRecordedExchange: the server side answers the recorded client as the real server did, byte for byte.
func TestRecordedExchange(t *testing.T) {
	s := NewServer(realNonce, users(map[string]string{"jaasuser": "secret"}))
	ch, err := s.Evaluate(nil)
	if err != nil || string(ch) != realChallenge {
		t.Fatalf("challenge %q, %v; want %q", ch, err, realChallenge)
	}
	rsp, err := s.Evaluate([]byte(realResponse))
	if err != nil || string(rsp) != realRspauth {
		t.Fatalf("answer to the recorded response: %q, %v; want %q", rsp, err, realRspauth)
	}
	if !s.Complete() || s.User() != "jaasuser" {
		t.Errorf("Complete %v User %q, want true jaasuser", s.Complete(), s.User())
	}
	if _, err := s.Evaluate([]byte("again")); !errors.Is(err, ErrFailed) {
		t.Errorf("a token after the login: %v, want ErrFailed", err)
	}
}

// TestResponseRoundTrip: Response, the client side, logs in on the server side; a wrong password and
// malformed responses fail, and each leaves the exchange incomplete.
func TestResponseRoundTrip(t *testing.T) {
	pw := users(map[string]string{"jaasuser": "secret", "ünï": "pässwörd"})
	for _, tc := range []struct {
		user, password string
		ok             bool
	}{{"jaasuser", "secret", true}, {"ünï", "pässwörd", true}, {"jaasuser", "wrong", false}, {"nobody", "secret", false}} {
		s := NewServer("nonce-1", pw)
		ch, _ := s.Evaluate([]byte("ignored"))
		resp, err := Response(ch, tc.user, tc.password, "cnonce-1")
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Evaluate(resp)
		if (err == nil) != tc.ok || s.Complete() != tc.ok {
			t.Errorf("%s/%s: error %v, complete %v; want ok=%v", tc.user, tc.password, err, s.Complete(), tc.ok)
		}
	}
	for _, bad := range []string{"", "garbage", "qop=auth", `username="jaasuser"`, `username="a,realm="zk-sasl-md5`,
		`username="jaasuser",username="jaasuser"`, realResponse[:len(realResponse)-1] + "0"} {
		s := NewServer(realNonce, pw)
		s.Evaluate(nil)
		if _, err := s.Evaluate([]byte(bad)); !errors.Is(err, ErrFailed) || s.Complete() {
			t.Errorf("response %q: %v (complete %v), want ErrFailed", bad, err, s.Complete())
		}
	}
}

// FuzzEvaluate: no response token panics the server side or completes a login without the password; a
// well-formed one with a changed byte fails.
func FuzzEvaluate(f *testing.F) {
	f.Add([]byte(realResponse))
	f.Add([]byte(`username="\`))
	f.Add([]byte(`=,=,"`))
	f.Add([]byte("username=jaasuser,realm=zk-sasl-md5,nonce=" + realNonce))
	f.Fuzz(func(t *testing.T, token []byte) {
		s := NewServer(realNonce, users(map[string]string{"jaasuser": "secret"}))
		s.Evaluate(nil)
		rsp, err := s.Evaluate(token)
		if err == nil && (string(rsp) != realRspauth || !s.Complete()) {
			t.Errorf("token %q logged in with %q, complete %v", token, rsp, s.Complete())
		}
	})
}
