#!/usr/bin/env bash
# Podman's --userns=auto under concurrency: two loops create containers with
# the given --userns value while two loops create and remove networks, for
# SECONDS (default 150); every create that takes over 30 s is reported as
# hung and killed (a hung podman ignores SIGTERM: `timeout -k`), as is every
# removal, so that a deadlock never outlives the run. On podman 4.3
# (Debian 12) plain `auto` hangs (its guess of the size walks the image's
# layers with the store's locks taken in the wrong order, fixed by
# containers/storage#1387), `auto:size=65536`, which Jobdeck passes, does
# not. The figures are in docs/measurements.md. Needs rootful podman and
# busybox-static (scripts/setup.sh --containers).
# Usage: bench/podman-userns-stress.sh [USERNS] [SECONDS]
set -uo pipefail
userns="${1:-auto:size=65536}"
seconds="${2:-150}"
image=localhost/jobdeck-bench/busybox:1
if ! podman image exists "$image"; then
  root="$(mktemp -d)"
  mkdir -p "$root/bin" && cp /bin/busybox "$root/bin/" && ln -s busybox "$root/bin/true"
  tar -C "$root" -c . | podman import -q - "$image" >/dev/null
  rm -rf "$root"
fi
end=$((SECONDS + seconds))
count="$(mktemp)"
# `timeout` answers 124 when it stopped the command with SIGTERM, and 137
# when the command ignored that and `-k` killed it.
hung() { [ "$1" = 124 ] || [ "$1" = 137 ]; }
creator() {
  local i=0
  while [ "$SECONDS" -lt "$end" ]; do
    i=$((i + 1))
    timeout -k 5 30 podman create -q --userns "$userns" --name "stress-c$1-$i" "$image" true >/dev/null 2>&1
    hung $? && echo "hung: podman create stress-c$1-$i"
    timeout -k 5 30 podman rm -f "stress-c$1-$i" >/dev/null 2>&1
    echo c >> "$count"
  done
}
networker() {
  local i=0
  while [ "$SECONDS" -lt "$end" ]; do
    i=$((i + 1))
    timeout -k 5 30 podman network create --disable-dns --subnet "10.99.$(((50 * $1 + i) % 250)).0/24" "stress-n$1-$i" >/dev/null 2>&1
    hung $? && echo "hung: podman network create stress-n$1-$i"
    timeout -k 5 30 podman network rm -f "stress-n$1-$i" >/dev/null 2>&1
    echo n >> "$count"
  done
}
echo "podman $(podman version --format '{{.Client.Version}}'), --userns $userns, $seconds s"
creator 1 & creator 2 & networker 1 & networker 2 &
wait
echo "creates: $(grep -c c "$count"), network creates: $(grep -c n "$count")"
rm -f "$count"
