package transport

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// A reset once an answer began (Go on loopback reports a close there, so
// the error is built as net/http wraps a reset elsewhere) is the
// registration's, its answer cut; before any byte it is the host's. A
// timeout stays the host's even once an answer began.
func TestAResetInTheMiddleOfAnAnswerIsTheRegistrations(t *testing.T) {
	reset := &url.Error{Op: "Post", URL: "http://203.0.113.7/hook", Err: fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w",
		&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)})}
	out := classifyError(reset, false, time.Second, stageAnswering, false)
	if out.HostLevel || !out.Answered || out.Reason != "answer cut: connection reset by peer" {
		t.Errorf("in the middle of an answer: got %+v", out)
	}
	out = classifyError(reset, false, time.Second, stageWaiting, false)
	if !out.HostLevel || out.Answered {
		t.Errorf("before any byte: got %+v, want host-level", out)
	}
	out = classifyError(&url.Error{Op: "Post", Err: context.DeadlineExceeded}, true, time.Second, stageAnswering, false)
	if !out.HostLevel || out.Answered || out.Reason != "timeout: no answer within 1s (in the middle of its answer)" {
		t.Errorf("timed out in the middle of an answer: got %+v, want host-level", out)
	}
}

// A stream the receiver refused (REFUSED_STREAM: not processed, RFC 9113
// §8.7) is the host's, as a 503 is; net/http retries it within the attempt
// and gives it up only after some 63 s. A stream herald reset for the
// receiver's frames on it (net/http leaves the cause nil: a flow-control
// window overrun) is the registration's, as any invalid answer. Both
// errors are built here as net/http returns them.
func TestARefusedH2StreamIsTheHostsAnOverrunOneTheRegistrations(t *testing.T) {
	for _, c := range []struct {
		code      http2.ErrCode
		hostLevel bool
		reason    string
	}{
		{http2.ErrCodeRefusedStream, true, "request refused by the receiver (HTTP/2 REFUSED_STREAM) waiting for the response headers"},
		{http2.ErrCodeFlowControl, false, "answer not valid HTTP/2: FLOW_CONTROL_ERROR"},
	} {
		err := &url.Error{Op: "Post", URL: "https://203.0.113.7/hook", Err: http2.StreamError{StreamID: 13, Code: c.code}}
		out := classifyError(err, false, time.Minute, stageWaiting, false)
		if out.HostLevel != c.hostLevel || out.Answered == c.hostLevel || out.Reason != c.reason {
			t.Errorf("%v: got %+v, want host-level %t, reason %q", c.code, out, c.hostLevel, c.reason)
		}
	}
}
