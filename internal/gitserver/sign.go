package gitserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Formats of Signing, as git's gpg.format names them.
const (
	FormatOpenPGP = "openpgp"
	FormatSSH     = "ssh"
)

// Signing is how a Repo signs the commits and annotated tags it makes,
// as users do: git's own signing (commit-tree -S, tag --sign) with
// gpg.format and user.signingkey, which runs ssh-keygen -Y sign or gpg.
type Signing struct {
	// Format is FormatOpenPGP or FormatSSH.
	Format string
	// Key is user.signingkey: the private key file of ssh-keygen, or the
	// fingerprint of gpg's key.
	Key string
	// GNUPGHome is gpg's home (FormatOpenPGP): the key ring that holds
	// Key.
	GNUPGHome string
}

// config is the git options that sign with s.
func (s *Signing) config() []string {
	return []string{"-c", "gpg.format=" + s.Format, "-c", "user.signingkey=" + s.Key}
}

// env is the environment of the git that signs with s.
func (s *Signing) env() []string {
	if s.GNUPGHome == "" {
		return nil
	}
	return []string{"GNUPGHOME=" + s.GNUPGHome}
}

// NewSSHSigning makes an SSH key of kind (ed25519, ecdsa, rsa) with
// ssh-keygen in dir, and returns the Signing of it and its public key as
// an authorized_keys line.
func NewSSHSigning(dir, kind string) (*Signing, []byte, error) {
	key := filepath.Join(dir, "id_"+kind)
	if _, err := run(nil, nil, "ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "convoy-test-"+kind, "-f", key); err != nil {
		return nil, nil, err
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		return nil, nil, fmt.Errorf("reading the public key: %w", err)
	}
	return &Signing{Format: FormatSSH, Key: key}, pub, nil
}

// NewOpenPGPSigning makes an OpenPGP key (ed25519, no passphrase) of
// "name <email>" with gpg in a new home under dir (keep dir's path short:
// gpg-agent's socket is there), and returns the Signing of it and its
// public key, armored, as gpg --export --armor prints it. Close stops the
// gpg-agent it started.
func NewOpenPGPSigning(dir, name, email string) (*Signing, []byte, error) {
	home := filepath.Join(dir, "gnupg")
	if err := os.Mkdir(home, 0o700); err != nil {
		return nil, nil, fmt.Errorf("gpg home: %w", err)
	}
	s := &Signing{Format: FormatOpenPGP, GNUPGHome: home}
	env := s.env()
	uid := name + " <" + email + ">"
	if _, err := run(env, nil, "gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", "never"); err != nil {
		return nil, nil, err
	}
	out, err := run(env, nil, "gpg", "--batch", "--with-colons", "--list-keys", uid)
	if err != nil {
		_ = s.Close()
		return nil, nil, err
	}
	for line := range strings.Lines(out) {
		if fields := strings.Split(line, ":"); fields[0] == "fpr" && len(fields) > 9 {
			s.Key = fields[9]
			break
		}
	}
	pub, err := run(env, nil, "gpg", "--batch", "--armor", "--export", s.Key)
	if err != nil || s.Key == "" {
		_ = s.Close()
		return nil, nil, fmt.Errorf("exporting the key %q: %w", s.Key, err)
	}
	return s, []byte(pub + "\n"), nil
}

// Close stops the gpg-agent of an OpenPGP Signing; nothing for SSH.
func (s *Signing) Close() error {
	if s.GNUPGHome == "" {
		return nil
	}
	_, err := run(s.env(), nil, "gpgconf", "--kill", "gpg-agent")
	return err
}
