//go:build linux

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// bareTLS sends n bytes from memory over one TLS 1.3 connection from
// from's namespace to to's, in the 256 KiB writes of the data path, and
// returns how long the receiver took to read them all (to io.Discard):
// the ceiling a copy between the same two namespaces is measured
// against. Both ends run in this process, on the machine's cores.
func bareTLS(b testing.TB, from, to *host, n int64) time.Duration {
	b.Helper()
	conf := selfSigned(b)
	var ln net.Listener
	err := inNamespace(to.ns, func() (err error) {
		ln, err = tls.Listen("tcp", to.ip+":0", conf)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		m, err := io.Copy(io.Discard, c)
		if err == nil && m != n {
			err = fmt.Errorf("received %d bytes of %d", m, n)
		}
		got <- err
	}()
	var raw net.Conn
	err = inNamespace(from.ns, func() (err error) {
		raw, err = (&net.Dialer{Timeout: 10 * time.Second}).Dial("tcp", ln.Addr().String())
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	raw.(*net.TCPConn).SetNoDelay(true)
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	defer c.Close()
	if err := c.HandshakeContext(context.Background()); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 256<<10)
	rand.Read(buf)
	start := time.Now()
	for sent := int64(0); sent < n; sent += int64(len(buf)) {
		if _, err := c.Write(buf[:min(int64(len(buf)), n-sent)]); err != nil {
			b.Fatal(err)
		}
	}
	c.CloseWrite()
	if err := <-got; err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// inNamespace runs fn on a thread in the network namespace ns: sockets it
// makes stay there, wherever they are used later.
func inNamespace(ns string, fn func() error) error {
	res := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		target, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			res <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			res <- fmt.Errorf("enter %s: %w", ns, err)
			return
		}
		res <- fn()
	}()
	return <-res
}

// selfSigned is a server TLS 1.3 config with a fresh ECDSA certificate.
func selfSigned(b testing.TB) *tls.Config {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bare"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		b.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		MinVersion: tls.VersionTLS13}
}
