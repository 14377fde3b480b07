package peer

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ErrCorrupt means an identity file exists but cannot be used. It is never
// replaced automatically: doing so would give the device a new ID.
var ErrCorrupt = errors.New("identity file is corrupt")

// Names of the identity files inside a data directory.
const (
	KeyFile  = "key.pem"  // PKCS #8 Ed25519 private key, mode 0600
	CertFile = "cert.pem" // self-signed X.509 certificate, mode 0600
)

// Identity is this device's ID and the certificate (with its private key)
// that proves it.
type Identity struct {
	ID   ID
	Cert tls.Certificate
}

// LoadOrCreate loads the identity kept in dir, creating dir, the key and
// the certificate on first use. It makes dir and its files the owner's
// alone (SecureDir; call that first to log what it changed) and removes the
// temporary files a writer killed mid-write left (they may hold an unused
// private key). A missing certificate is re-issued for the
// existing key (the ID does not change); a missing key next to an existing
// certificate, or any file that cannot be parsed, is an error wrapping
// ErrCorrupt.
func LoadOrCreate(dir string) (*Identity, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	if _, err := SecureDir(dir); err != nil {
		return nil, err
	}
	if err := removeStaleTemps(dir); err != nil {
		return nil, err
	}
	key, err := loadOrCreateKey(dir)
	if err != nil {
		return nil, err
	}
	certDER, err := loadOrCreateCert(dir, key)
	if err != nil {
		return nil, err
	}
	pub := key.Public().(ed25519.PublicKey)
	return &Identity{
		ID:   NewID(pub),
		Cert: tls.Certificate{Certificate: [][]byte{certDER}, PrivateKey: key},
	}, nil
}

func loadOrCreateKey(dir string) (ed25519.PrivateKey, error) {
	path := filepath.Join(dir, KeyFile)
	for {
		key, err := loadKey(path)
		if !errors.Is(err, fs.ErrNotExist) {
			return key, err
		}
		if keyMissingHook != nil {
			keyMissingHook()
		}
		if _, err := os.Stat(filepath.Join(dir, CertFile)); err == nil {
			// Every writer links the key before it writes the certificate,
			// so a concurrent first load may have written both since the
			// read above: read the key once more before calling it lost.
			key, err := loadKey(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("load %s: missing while %s exists: %w", path, CertFile, ErrCorrupt)
			}
			return key, err
		}
		created, err := createKey(path)
		if errors.Is(err, fs.ErrExist) {
			continue // another process created it first: load theirs
		}
		return created, err
	}
}

// keyMissingHook, set by tests only, runs between finding no key and
// looking for the certificate: where a concurrent first load can finish.
var keyMissingHook func()

func loadKey(path string) (ed25519.PrivateKey, error) {
	der, err := readPEM(path, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w: %v", path, ErrCorrupt, err)
	}
	key, ok := parsed.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("load %s: not an ed25519 key: %w", path, ErrCorrupt)
	}
	return key, nil
}

func createKey(path string) (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	block := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := writeNew(path, block, 0o600); err != nil {
		return nil, err
	}
	return key, nil
}

func loadOrCreateCert(dir string, key ed25519.PrivateKey) ([]byte, error) {
	path := filepath.Join(dir, CertFile)
	der, err := loadCert(path, key)
	if !errors.Is(err, fs.ErrNotExist) {
		return der, err
	}
	der, err = newCertDER(key, time.Now())
	if err != nil {
		return nil, err
	}
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := writeNew(path, block, 0o600); errors.Is(err, fs.ErrExist) {
		return loadCert(path, key)
	} else if err != nil {
		return nil, err
	}
	return der, nil
}

// loadCert reads the certificate and checks that it is for key.
func loadCert(path string, key ed25519.PrivateKey) ([]byte, error) {
	der, err := readPEM(path, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w: %v", path, ErrCorrupt, err)
	}
	pub, ok := cert.PublicKey.(ed25519.PublicKey)
	if !ok || !pub.Equal(key.Public()) {
		return nil, fmt.Errorf("load %s: not the certificate of %s: %w", path, KeyFile, ErrCorrupt)
	}
	return der, nil
}

// readPEM returns the DER of the single PEM block of the given type in path.
// A missing file yields an error matching fs.ErrNotExist.
func readPEM(path, blockType string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w: %v", path, ErrCorrupt, err)
	}
	block, rest := pem.Decode(data)
	if block == nil || block.Type != blockType || len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("load %s: want one PEM %q block: %w", path, blockType, ErrCorrupt)
	}
	return block.Bytes, nil
}
