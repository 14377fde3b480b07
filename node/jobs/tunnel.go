package jobs

import (
	"io"
	"net"
	"net/http"
	"time"
)

// ServeTunnel splices one tunnelled connection: the request body flows to
// the TCP service at addr (a container port published on this node's
// loopback), and what the service sends flows back as the response body.
// Over HTTP/3 request and response stream at once, so one QUIC stream
// carries one TCP connection.
func ServeTunnel(w http.ResponseWriter, r *http.Request, addr string) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		writeError(w, http.StatusBadGateway, "unreachable", "the job's port does not answer: "+err.Error())
		return
	}
	defer c.Close()
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(c, r.Body)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite() // the client finished sending
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				break
			}
			fl.Flush()
		}
		if err != nil {
			break
		}
	}
	c.Close()
	<-done
}

func nowMillis() int64 { return time.Now().UnixMilli() }
