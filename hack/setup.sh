#!/usr/bin/env bash
# What the tests need from Debian's packages beside Go: git (git
# http-backend and git-upload-pack serve the Git tests), OpenSSH's server
# (sshd serves Git over SSH to the tests: internal/sshd) and client
# (ssh-keygen signs commits and tags, pkg/git's tests), GnuPG (gpg signs
# them too), Chromium (the browser test of kubectl convoy view, test/e2e)
# buildah (the build of the Dockerfile's final stage,
# hack/tools/dockerfile), and curl and OpenSSL (make run prints how to sign
# and send a webhook delivery with them; TestLocalUp runs it). Each
# that is missing is installed with apt-get when this runs as root (CI runs
# as root, with no service started: nothing is started here either);
# otherwise it says what to install. Under CI=true a tool still missing
# fails the run: the tests that need it would fail anyway.
set -euo pipefail

missing=()
command -v git >/dev/null 2>&1 && command -v git-upload-pack >/dev/null 2>&1 || missing+=(git)
[ -x /usr/sbin/sshd ] || command -v sshd >/dev/null 2>&1 || missing+=(openssh-server)
command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1 || missing+=(openssh-client)
command -v gpg >/dev/null 2>&1 && command -v gpgconf >/dev/null 2>&1 || missing+=(gnupg)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v buildah >/dev/null 2>&1 || missing+=(buildah)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "setup: installing ${missing[*]} (Debian's packages)" >&2
	export DEBIAN_FRONTEND=noninteractive
	# The package lists of a fresh machine may be empty or stale.
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
	exit 0
fi
echo "setup: missing ${missing[*]}: install them (Debian: apt-get install ${missing[*]}); the tests that need them skip, and fail under CI=true" >&2
[ "${CI:-}" != true ]
