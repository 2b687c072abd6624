#!/usr/bin/env bash
# Installs what the VS Code end-to-end test (test/e2e/vscode.e2e.test.ts) needs on Debian 12 with Node 20:
#   - apt: Debian's chromium (the browser playwright-core drives), ripgrep, and the build dependencies
#     of code-server's native modules;
#   - code-server (a real VS Code served to a browser) from the npm registry, into a cache folder outside
#     the repository: ${TAB_RELAY_E2E_HOME:-$HOME/.cache/tab-relay-e2e}/code-server-<version>.
# playwright-core and @vscode/vsce come from the repository's own devDependencies.
#
# Idempotent: a finished install leaves a marker file, and a second run only checks and exits in about a second.
# Works without access to github.com (see /work/shared/notes/vscode-e2e.md for why each workaround exists).
set -euo pipefail

CODE_SERVER_VERSION="4.100.3" # VS Code 1.100.3; the newest code-server whose engines.node is 20
E2E_HOME="${TAB_RELAY_E2E_HOME:-$HOME/.cache/tab-relay-e2e}"
PREFIX="$E2E_HOME/code-server-$CODE_SERVER_VERSION"
MARKER="$PREFIX/.install-complete"
NPM_LOG="$E2E_HOME/setup-npm.log"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

log() { printf '[e2e-setup %4ss] %s\n' "$SECONDS" "$*"; }
die() {
  printf '[e2e-setup] ERROR: %s\n' "$*" >&2
  exit 1
}
trap 'die "command failed (line $LINENO): $BASH_COMMAND"' ERR

# The VS Code and console browser tests may both call this at once; apt and npm must not run twice together.
mkdir -p "$E2E_HOME"
exec 9>"$E2E_HOME/.setup.lock"
flock 9

# ---------------------------------------------------------------------------------------------------- apt --
# build-essential python3 pkg-config libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev: node-gyp builds of
# kerberos, native-keymap, node-pty, @vscode/spdlog and friends during code-server's postinstall.
# ripgrep: stands in for the binary @vscode/ripgrep would download from GitHub. chromium: `playwright install`
# cannot download browsers here.
APT_PACKAGES=(build-essential python3 pkg-config libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev ripgrep chromium)
# shellcheck source=test/support/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/apt-install.sh"
apt_install_missing "${APT_PACKAGES[@]}"
[ -x /usr/bin/chromium ] || die "/usr/bin/chromium is missing after installing the chromium package"
command -v rg >/dev/null || die "rg is missing after installing the ripgrep package"

# ------------------------------------------------------------------------------------------- code-server --
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" = 20 ] ||
  die "code-server $CODE_SERVER_VERSION requires Node 20 (engines.node), but node is $(node --version)"

if [ -f "$MARKER" ] && [ -x "$PREFIX/node_modules/.bin/code-server" ]; then
  log "code-server $CODE_SERVER_VERSION already installed in $PREFIX"
else
  # A half-finished install (no marker) is thrown away: npm would not repair a broken native build by itself.
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX" "$E2E_HOME/tmp"
  # npm and the postinstall scripts run with this TMPDIR, so os.tmpdir() below is the same folder they see.
  export TMPDIR="$E2E_HOME/tmp"

  # @vscode/ripgrep 1.15.11's postinstall first looks for its release asset in
  # $(os.tmpdir())/vscode-ripgrep-cache-1.15.11/ and only asks api.github.com when it is not there, so the
  # asset name is seeded with Debian's rg (the same ripgrep 13.0.0).
  rg_cache="$TMPDIR/vscode-ripgrep-cache-1.15.11"
  rg_asset="$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
  if [ ! -s "$rg_asset" ]; then
    log "seeding the @vscode/ripgrep download cache with $(command -v rg)"
    mkdir -p "$rg_cache"
    stage="$(mktemp -d)"
    cp "$(command -v rg)" "$stage/rg"
    tar -C "$stage" -czf "$rg_asset" rg
    rm -rf "$stage"
  fi

  # As root, code-server's postinstall.sh refuses to run unless this variable is set (npm 11 warns that it
  # does not know the option, but passes it through, which is all the script checks).
  export npm_config_unsafe_perm=true
  # node-pty's post-install runs `npx node-gyp ...`; a `yes=false` in ~/.npmrc would make npx abort.
  export npm_config_yes=true
  # Build native modules against the local headers in /usr/include/node instead of downloading them.
  export npm_config_nodedir="${npm_config_nodedir:-/usr}"

  echo '{ "name": "tab-relay-e2e-code-server", "private": true }' >"$PREFIX/package.json"
  log "npm install code-server@$CODE_SERVER_VERSION (native builds; about a minute; log: $NPM_LOG)"
  if ! (cd "$PREFIX" && npm install --no-audit --no-fund "code-server@$CODE_SERVER_VERSION") >"$NPM_LOG" 2>&1; then
    tail -n 40 "$NPM_LOG" >&2
    die "npm install code-server@$CODE_SERVER_VERSION failed; full log in $NPM_LOG"
  fi

  # npm may report success while skipping install scripts it does not allow; then VS Code's own
  # node_modules are missing, and this is the first file that would be absent.
  [ -x "$PREFIX/node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" ] ||
    die "code-server's postinstall did not complete (no @vscode/ripgrep binary); see $NPM_LOG"

  # Even `--version` writes ~/.config/code-server and ~/.local/share/code-server unless redirected.
  scratch="$(mktemp -d)"
  version="$(XDG_CONFIG_HOME="$scratch" XDG_DATA_HOME="$scratch" "$PREFIX/node_modules/.bin/code-server" --version)" ||
    die "code-server --version failed"
  rm -rf "$scratch"
  # It also logs "Wrote default config file" before the version line.
  version="$(printf '%s\n' "$version" | tail -n 1)"
  case "$version" in
    "$CODE_SERVER_VERSION "*) ;;
    *) die "unexpected code-server version: $version" ;;
  esac
  date -u +%FT%TZ >"$MARKER"
  log "code-server installed: $version"
fi

# ------------------------------------------------------------------------------ repository devDependencies --
(cd "$REPO/test" && node -e 'require.resolve("playwright-core")') 2>/dev/null ||
  die "playwright-core is not installed in the repository: run npm install at $REPO"
[ -x "$REPO/node_modules/.bin/vsce" ] || die "@vscode/vsce is not installed in the repository: run npm install at $REPO"

log "OK: end-to-end prerequisites ready (code-server in $PREFIX, browser /usr/bin/chromium)"
