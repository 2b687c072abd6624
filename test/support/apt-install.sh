# Sourced by test/e2e/setup.sh and test/support/setup-proxies.sh (which define log and die): installs whichever of
# the Debian packages given are missing, as root or through password-less sudo, and says so when none is.
apt_install_missing() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "already installed: $*"
    return 0
  fi
  command -v apt-get >/dev/null || die "missing packages (${missing[*]}) and no apt-get: this script targets Debian 12"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null && sudo -n true 2>/dev/null ||
      die "missing packages (${missing[*]}); run this script as root (or with password-less sudo) or install them first"
    sudo=(sudo -n)
  fi
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq || die "apt-get update failed"
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed"
}
