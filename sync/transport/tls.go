package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"

	"github.com/quic-go/quic-go/http3"

	"github.com/labpool/labpool/sync/peer"
)

// ErrWrongPeer means the device that answered is not the one we dialed.
var ErrWrongPeer = errors.New("peer is not the expected device")

// Join proofs are bound to the session by this TLS exporter.
const (
	ExporterLabel = "labpool join"
	ExporterLen   = 32
)

// serverName is the SNI and URL host of every pinned request: the real
// target is the peer ID, never a name.
const serverName = "labpool"

func (e *Endpoint) serverTLS() *tls.Config {
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		Certificates:           []tls.Certificate{e.id.Cert},
		ClientAuth:             tls.RequireAnyClientCert,
		VerifyConnection:       verifyPeer(nil),
		NextProtos:             []string{http3.NextProtoH3},
		SessionTicketsDisabled: true,
	}
}

// clientTLS pins the server to want; a nil want accepts any device.
func (e *Endpoint) clientTLS(want *peer.ID) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{e.id.Cert},
		// There is no CA: VerifyConnection checks the device ID instead.
		InsecureSkipVerify: true,
		VerifyConnection:   verifyPeer(want),
		NextProtos:         []string{http3.NextProtoH3},
		ServerName:         serverName,
	}
}

// verifyPeer accepts a handshake whose peer certificate holds an Ed25519
// key (TLS 1.3 has already proved the peer owns it) and, when want is set,
// whose key hashes to *want.
func verifyPeer(want *peer.ID) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		got, err := stateID(&cs)
		if err != nil {
			return err
		}
		if want != nil && got != *want {
			return fmt.Errorf("verify peer: got %s, want %s: %w", got.Short(), want.Short(), ErrWrongPeer)
		}
		return nil
	}
}

func stateID(cs *tls.ConnectionState) (peer.ID, error) {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return peer.ID{}, errors.New("verify peer: no certificate")
	}
	return peer.IDFromCert(cs.PeerCertificates[0])
}

// PeerID returns the device that sent r, proven by its TLS handshake.
func PeerID(r *http.Request) (peer.ID, bool) {
	id, err := stateID(r.TLS)
	return id, err == nil
}

// KeyingMaterial returns the join exporter (ExporterLabel, ExporterLen
// bytes) of the TLS session that carried r. The client gets the same value
// from Conn.KeyingMaterial.
func KeyingMaterial(r *http.Request) ([]byte, error) {
	if r.TLS == nil {
		return nil, errors.New("export keying material: request has no tls session")
	}
	return exportJoin(r.TLS)
}

func exportJoin(cs *tls.ConnectionState) ([]byte, error) {
	b, err := cs.ExportKeyingMaterial(ExporterLabel, nil, ExporterLen)
	if err != nil {
		return nil, fmt.Errorf("export keying material: %w", err)
	}
	return b, nil
}
