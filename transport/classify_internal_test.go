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
