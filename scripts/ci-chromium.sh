#!/usr/bin/env bash
# ci-chromium.sh — make a headless Chromium ready for the dashboard's browser
# tests (gateway/ui_browser_test.go).
#
# Installs Debian's chromium package when no browser is found, checks that it
# starts, and prints ONE line on stdout:
#
#   export TOOLGATE_CHROMIUM=/usr/bin/chromium
#
# so CI can run:   eval "$(bash scripts/ci-chromium.sh)"
# Everything else goes to stderr. Running it again changes nothing and prints
# the same line. Installing needs root (CI runs as root).
#
# Environment (optional):
#   TOOLGATE_CHROMIUM  a browser binary to use instead of looking one up
set -euo pipefail

log() { echo "ci-chromium: $*" >&2; }
die() { log "$*"; exit 1; }

find_browser() {
	if [[ -n ${TOOLGATE_CHROMIUM:-} ]]; then
		[[ -x $TOOLGATE_CHROMIUM ]] || die "TOOLGATE_CHROMIUM=$TOOLGATE_CHROMIUM is not an executable"
		echo "$TOOLGATE_CHROMIUM"
		return
	fi
	local name
	for name in chromium chromium-browser; do
		if command -v "$name" >/dev/null; then
			command -v "$name"
			return
		fi
	done
}

browser=$(find_browser)
if [[ -z $browser ]]; then
	[[ $EUID -eq 0 ]] || die "chromium is not installed and installing it needs root"
	log "installing chromium from Debian's packages"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq chromium >&2 # with its recommended fonts, for legible screenshots
	browser=$(find_browser)
	[[ -n $browser ]] || die "apt-get installed chromium but it is not on PATH"
fi

# Prove it starts headless with the flags the tests use, in a throwaway profile.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
if ! out=$(timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$profile" --dump-dom 'data:text/html,<p>ok</p>' 2>/dev/null) || [[ $out != *"<p>ok</p>"* ]]; then
	die "$browser does not render a page headless"
fi
log "ready: $("$browser" --version 2>/dev/null | head -n1) at $browser"
echo "export TOOLGATE_CHROMIUM=$browser"
