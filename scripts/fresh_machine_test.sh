#!/usr/bin/env bash
# Proves the README's set-up on a machine that has never seen rill: makes a throw-away Debian minbase
# root with debootstrap, copies a clean checkout of HEAD and ../shared into it, runs the README's two
# commands there exactly as written, and always removes the root again.
#   scripts/fresh_machine_test.sh [RELEASE]   bookworm (Debian 12, the default) or trixie (Debian 13)
# Needs root, debootstrap and the network to Debian's archive and npm. Exits non-zero when either
# command fails. The package mirrors are the host's own, read from its apt sources now, with the
# release's suite names. RILL_FRESH_DIR chooses where the root is made (default /var/tmp); downloaded
# packages are kept per release in RILL_FRESH_CACHE (default /var/cache/rill-fresh), so a second run
# on the same host fetches only what changed (the root itself is new every time).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${RILL_SHARED:-$repo/../shared}
release=${1:-bookworm}
case $release in
  bookworm | trixie) ;;
  *) echo "usage: scripts/fresh_machine_test.sh [bookworm|trixie]" >&2; exit 2 ;;
esac
[[ $(id -u) == 0 ]] || { echo "fresh_machine_test.sh: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "fresh_machine_test.sh: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
[[ -d $shared ]] || { echo "fresh_machine_test.sh: no shared data at $shared" >&2; exit 2; }
shared=$(cd "$shared" && pwd)

# The host's own Debian suites (its release, -updates, -security), as apt itself resolved them, renamed
# to the root's release: the same mirrors serve every release.
mapfile -t host_sources < <(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' |
  awk '$2 ~ /^[a-z]+(-updates|-security)?$/ && $3 == "main"' | sort -u)
host_release=$(printf '%s\n' "${host_sources[@]}" | awk '$2 !~ /-/ { print $2; exit }')
[[ -n $host_release ]] || { echo "fresh_machine_test.sh: the host's apt sources have no Debian main suite" >&2; exit 2; }
mapfile -t sources < <(printf '%s\n' "${host_sources[@]}" |
  awk -v from="$host_release" -v to="$release" '$2 == from || $2 == from "-updates" || $2 == from "-security" { sub("^" from, to, $2); print }')
mirror=$(printf '%s\n' "${sources[@]}" | awk -v r="$release" '$2 == r { print $1; exit }')
cache=${RILL_FRESH_CACHE:-/var/cache/rill-fresh}/$release
mkdir -p "$cache"

root=$(mktemp -d "${RILL_FRESH_DIR:-/var/tmp}/rill-fresh.XXXXXX")
stamp() { date +%s; }
t0=$(stamp)

cleanup() {
  local code=$? pid mounts
  trap - EXIT INT TERM
  # Processes left inside the root (a server a test started, say) would keep its mounts busy.
  for pid in /proc/[0-9]*; do
    [[ $(readlink "$pid/root" 2>/dev/null) == "$root"* ]] && kill -9 "${pid#/proc/}" 2>/dev/null
  done
  # Deepest first, so /dev/pts goes before /dev; debootstrap may have left its own proc and sys too.
  mapfile -t mounts < <(awk -v r="$root" 'index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r)
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m"; done
  if awk -v r="$root" 'index($2, r "/") == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
    echo "fresh_machine_test.sh: something is still mounted under $root; left it in place" >&2
    exit 1
  fi
  rm -rf --one-file-system "$root"
  rm -f "$root.debootstrap.log"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== fresh root: debootstrap --variant=minbase $release $root $mirror"
debootstrap --variant=minbase --cache-dir="$cache" "$release" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
  { tail -n 30 "$root.debootstrap.log"; exit 1; }
t1=$(stamp)

# The root sees the host's mirrors with its own release's suites, as a newly installed Debian would.
printf '%s\n' "${sources[@]}" | awk '{ print "deb " $1 " " $2 " main" }' >"$root/etc/apt/sources.list"
# The host may reach HTTPS through a proxy whose certificate only its own bundle trusts.
install -D -m 644 /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/rill-host-ca.crt"
mkdir -p "$root/work"
git clone -q --no-hardlinks "$repo" "$root/work/main"
cp -a "$shared" "$root/work/shared"

mount -t proc proc "$root/proc"
mount --bind /sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount --bind "$cache" "$root/var/cache/apt/archives"  # the packages setup.sh downloads, kept for the next run

in_root() {  # a login-like environment: nothing of the host's but CI and the CA bundle
  chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ${CI:+CI=$CI} \
    NODE_EXTRA_CA_CERTS=/usr/local/share/rill-host-ca.crt SSL_CERT_FILE=/usr/local/share/rill-host-ca.crt \
    /bin/bash -c "cd /work/main && $1"
}

status=0
echo "== in the fresh root: bash scripts/setup.sh"
in_root "bash scripts/setup.sh" || status=$?
t2=$(stamp)
echo "== bash scripts/setup.sh exited $status after $((t2 - t1)) s"
if ((status == 0)); then
  echo "== in the fresh root (node $(in_root 'node --version' 2>/dev/null || echo none)): bash scripts/test.sh"
  in_root "bash scripts/test.sh" || status=$?
  t3=$(stamp)
  echo "== bash scripts/test.sh exited $status after $((t3 - t2)) s"
fi
echo "== fresh machine test ($release): debootstrap $((t1 - t0)) s, whole run $(($(stamp) - t0)) s, result $status"
exit "$status"
