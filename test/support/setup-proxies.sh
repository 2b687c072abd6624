#!/usr/bin/env bash
# Installs what the reverse-proxy tests (test/relay/nginx.test.ts, test/relay/caddy.test.ts) and the first-token
# benchmark (test/bench/proxyFirstToken.ts) run, from Debian 12's own archive with apt-get, as test/e2e/setup.sh
# installs Chromium: nginx (1.22), caddy (2.6) and openssl (the tests' self-signed certificates).
#
# The tests start their own nginx and Caddy on free ports with files in a temporary folder; they never use the
# services the packages install. (On a machine run by systemd, installing the packages also starts those services
# on ports 80 and 443, as on any Debian; in a container, /usr/sbin/policy-rc.d usually keeps them stopped.)
#
# Idempotent: when the three are installed it only checks and exits at once.
set -euo pipefail

log() { printf '[proxy-setup %4ss] %s\n' "$SECONDS" "$*"; }
die() {
  printf '[proxy-setup] ERROR: %s\n' "$*" >&2
  exit 1
}
trap 'die "command failed (line $LINENO): $BASH_COMMAND"' ERR

# The same lock as test/e2e/setup.sh: the test files run two at a time, and apt must never run twice at once.
E2E_HOME="${TAB_RELAY_E2E_HOME:-$HOME/.cache/tab-relay-e2e}"
mkdir -p "$E2E_HOME"
exec 9>"$E2E_HOME/.setup.lock"
flock 9

APT_PACKAGES=(nginx caddy openssl)
# shellcheck source=test/support/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
apt_install_missing "${APT_PACKAGES[@]}"
[ -x /usr/sbin/nginx ] || die "/usr/sbin/nginx is missing after installing the nginx package"
[ -x /usr/bin/caddy ] || die "/usr/bin/caddy is missing after installing the caddy package"
[ -x /usr/bin/openssl ] || die "/usr/bin/openssl is missing after installing the openssl package"
log "OK: $(/usr/sbin/nginx -v 2>&1), caddy $(/usr/bin/caddy version), $(/usr/bin/openssl version)"
