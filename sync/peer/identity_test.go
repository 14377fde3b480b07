package peer_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

func TestLoadOrCreateReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, err := peer.LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := peer.LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != second.ID || string(first.Cert.Certificate[0]) != string(second.Cert.Certificate[0]) {
		t.Fatalf("second load changed identity: %v != %v", first.ID, second.ID)
	}
	cert, err := x509.ParseCertificate(first.Cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if id, err := peer.IDFromCert(cert); err != nil || id != first.ID {
		t.Errorf("IDFromCert = %v, %v; want %v", id, err, first.ID)
	}
	if err := cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature); err != nil {
		t.Errorf("certificate is not self-signed: %v", err)
	}
	for name, want := range map[string]os.FileMode{peer.KeyFile: 0o600, peer.CertFile: 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode = %v; want %v", name, fi.Mode().Perm(), want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("data dir holds %d entries; want 2 (no temp files left)", len(entries))
	}
}

func TestLoadOrCreateReissuesMissingCert(t *testing.T) {
	dir := t.TempDir()
	first, err := peer.LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, peer.CertFile)); err != nil {
		t.Fatal(err)
	}
	second, err := peer.LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != first.ID {
		t.Errorf("re-issued certificate changed the ID: %v != %v", second.ID, first.ID)
	}
}

func TestLoadOrCreateNeverReplaces(t *testing.T) {
	other := t.TempDir()
	if _, err := peer.LoadOrCreate(other); err != nil {
		t.Fatal(err)
	}
	otherCert, _ := os.ReadFile(filepath.Join(other, peer.CertFile))
	tests := []struct {
		name  string
		file  string
		data  []byte // nil removes the file
		wants string
	}{
		{"garbage key", peer.KeyFile, []byte("not pem"), peer.KeyFile},
		{"truncated key", peer.KeyFile, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), peer.KeyFile},
		{"garbage cert", peer.CertFile, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), peer.CertFile},
		{"cert of another key", peer.CertFile, otherCert, peer.CertFile},
		{"key missing", peer.KeyFile, nil, peer.KeyFile},
		{"empty cert", peer.CertFile, []byte{}, peer.CertFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := peer.LoadOrCreate(dir); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tt.file)
			if tt.data == nil {
				os.Remove(path)
			} else if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := peer.LoadOrCreate(dir)
			if !errors.Is(err, peer.ErrCorrupt) || !strings.Contains(err.Error(), tt.wants) {
				t.Fatalf("LoadOrCreate = %v; want ErrCorrupt naming %s", err, tt.wants)
			}
			after, _ := os.ReadFile(path)
			if tt.data != nil && string(after) != string(tt.data) {
				t.Errorf("%s was rewritten", tt.file)
			}
		})
	}
}

func TestLoadOrCreateUnreadable(t *testing.T) {
	dir := t.TempDir()
	if _, err := peer.LoadOrCreate(dir); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, peer.KeyFile)
	// Root reads a 0000 file, so make the key a directory instead.
	os.Remove(key)
	if err := os.Mkdir(key, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.LoadOrCreate(dir); !errors.Is(err, peer.ErrCorrupt) {
		t.Fatalf("LoadOrCreate = %v; want ErrCorrupt", err)
	}
}

func TestIDFromCertRejectsOtherKeys(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	if _, err := peer.IDFromCert(cert); !errors.Is(err, peer.ErrNotEd25519) {
		t.Errorf("IDFromCert(ecdsa) = %v; want ErrNotEd25519", err)
	}
	if _, err := peer.IDFromCert(nil); !errors.Is(err, peer.ErrNotEd25519) {
		t.Errorf("IDFromCert(nil) = %v; want ErrNotEd25519", err)
	}
}
