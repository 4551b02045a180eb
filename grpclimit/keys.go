package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/metadata"

	"github.com/sluicehq/sluice/internal/clientip"
)

// KeyFunc returns the key a call is limited by: its method, the client's
// address, a tenant named in its metadata. fullMethod is the call's
// "/package.Service/Method". An error means the call cannot be
// attributed: the interceptor fails it with codes.InvalidArgument when
// the error matches ErrNoKey, codes.Internal otherwise.
type KeyFunc func(ctx context.Context, fullMethod string) (string, error)

// ErrNoKey is matched by the error of a KeyFunc that found nothing to key
// the call by: no such metadata, no peer, an address that does not parse.
var ErrNoKey = errors.New("grpclimit: no key for the call")

// Keys are prefixed by where they come from ("method:", "ip:", "md:NAME:"),
// so that a client cannot make its metadata key collide with another
// client's address and spend that client's quota.
const (
	prefixMethod   = "method:"
	prefixIP       = "ip:"
	prefixMetadata = "md:"
)

// maxKeyLen bounds a key taken from metadata: a client that sends
// megabytes of key must not make the limiter hold them.
const maxKeyLen = 256

// KeyByMethod returns a KeyFunc keying calls by their full method
// ("/pkg.Service/Method"): one limit per method, every client together.
// Each method's key is made once and kept: a server's methods are the
// few its services register (grpc-go answers an unknown one before any
// interceptor runs, unless the server has an UnknownServiceHandler; then
// at most 4096 keys are kept and the others made per call).
func KeyByMethod() KeyFunc {
	var keys sync.Map // full method -> key
	var kept atomic.Int32
	return func(_ context.Context, fullMethod string) (string, error) {
		if k, ok := keys.Load(fullMethod); ok {
			return k.(string), nil
		}
		k := prefixMethod + fullMethod
		if kept.Add(1) <= maxMethodKeys {
			keys.Store(fullMethod, k)
		}
		return k, nil
	}
}

// maxMethodKeys bounds the keys KeyByMethod keeps.
const maxMethodKeys = 4096

// KeyByMetadata returns a KeyFunc keying calls by the value of an incoming
// metadata key (a tenant or user id set by an authenticating proxy in
// front): the last value, trimmed, when the key is repeated, since a proxy
// that adds it appends after whatever the client sent. name is compared in
// lower case, as gRPC keys metadata. It fails, matching ErrNoKey, when the
// key is absent, empty or longer than 256 bytes. Use it only for a key
// that clients cannot choose freely, or a client could give every call a
// new key; a cap on the limiter's keys bounds what that costs.
func KeyByMetadata(name string) KeyFunc {
	name = strings.ToLower(strings.TrimSpace(name))
	prefix := prefixMetadata + name + ":"
	return func(ctx context.Context, _ string) (string, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		v := ""
		if vs := md[name]; len(vs) > 0 {
			v = strings.TrimSpace(vs[len(vs)-1])
		}
		switch {
		case v == "":
			return "", fmt.Errorf("%w: no metadata %q", ErrNoKey, name)
		case len(v) > maxKeyLen:
			return "", fmt.Errorf("%w: metadata %q longer than %d bytes", ErrNoKey, name, maxKeyLen)
		}
		return prefix + v, nil
	}
}

// KeyByAll returns a KeyFunc whose key is made of every one of fns' keys,
// in order: KeyByAll(KeyByMethod(), byPeer) limits each client on each
// method. Each part is written with its length, so no part can be made to
// look like two (a tenant "a;ip:1.2.3.4" is not the tenant "a" and the
// address 1.2.3.4). It fails with the first part's error. Nil entries are
// skipped.
func KeyByAll(fns ...KeyFunc) KeyFunc {
	return func(ctx context.Context, fullMethod string) (string, error) {
		var buf [128]byte
		b := buf[:0]
		for _, f := range fns {
			if f == nil {
				continue
			}
			k, err := f(ctx, fullMethod)
			if err != nil {
				return "", err
			}
			b = strconv.AppendInt(b, int64(len(k)), 10)
			b = append(b, ':')
			b = append(b, k...)
			b = append(b, ';')
		}
		if len(b) == 0 {
			return "", fmt.Errorf("%w: no key function", ErrNoKey)
		}
		return string(b), nil
	}
}

// FirstKey returns a KeyFunc that tries each of fns in order and returns
// the first key found: FirstKey(KeyByMetadata("x-tenant"), byPeer) limits
// calls that name a tenant by their tenant and the others by address. It
// fails with the last error when none finds one. Nil entries are skipped.
func FirstKey(fns ...KeyFunc) KeyFunc {
	return func(ctx context.Context, fullMethod string) (string, error) {
		err := fmt.Errorf("%w: no key function", ErrNoKey)
		for _, f := range fns {
			if f == nil {
				continue
			}
			var k string
			if k, err = f(ctx, fullMethod); err == nil {
				return k, nil
			}
		}
		return "", err
	}
}

// clip bounds what of a hostile value an error quotes.
func clip(s string) string { return clientip.Clip(s) }
