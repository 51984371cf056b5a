#!/usr/bin/env bash
# Proves the README's set-up on a fresh system: creates a minimal Debian bookworm root with
# mmdebstrap (nothing but apt, git and make) from this machine's own apt sources, clones the
# committed repository into it and runs `make demo`, then `make test`, there. Prints the time each
# took; exits non-zero as soon as one fails. Needs root (chroot, mounts); installs mmdebstrap if
# it is missing.
#
#   tools/fresh-machine-check.sh [--keep] [--ref REV]
#     --keep     leave the root (its path is printed) for a look after a failure
#     --ref REV  clone REV instead of HEAD
set -euo pipefail

keep=0
ref=HEAD
while (($#)); do
  case "$1" in
    --keep) keep=1 ;;
    --ref) ref=${2:?--ref needs a revision}; shift ;;
    -h|--help) sed -n '2,10s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "fresh-machine-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

((EUID == 0)) || { echo "fresh-machine-check: needs root (mmdebstrap, chroot and mounts)" >&2; exit 2; }
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
commit=$(git -C "$repo" rev-parse --verify "$ref^{commit}")

if ! command -v mmdebstrap >/dev/null; then
  echo "fresh-machine-check: installing mmdebstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
fi

# The machine's own apt sources, each enabled file as one mirror argument.
sources=()
[[ -s /etc/apt/sources.list ]] && grep -qE '^\s*deb\s' /etc/apt/sources.list && sources+=(/etc/apt/sources.list)
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [[ -s "$f" ]] && sources+=("$f")
done
((${#sources[@]})) || { echo "fresh-machine-check: no apt sources on this machine" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/hetkern-fresh.XXXXXX")
root="$work/root"
cleanup() {
  if ((keep)); then echo "fresh-machine-check: root kept at $root"; else rm -rf --one-file-system "$work"; fi
}
trap cleanup EXIT

seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }

echo "fresh-machine-check: creating a minimal bookworm root in $root"
t0=$(seconds)
mmdebstrap --quiet --variant=apt --include=git,make bookworm "$root" "${sources[@]}"
t1=$(seconds)

git clone --quiet --no-local "$repo" "$root/work/hetkern"
git -C "$root/work/hetkern" checkout --quiet --detach "$commit"
cp /etc/resolv.conf "$root/etc/resolv.conf"

# One README command inside the root, in a private mount namespace: its mounts vanish with it.
run_in_root() {
  unshare --mount --fork bash -c '
    set -e
    root=$1; shift
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/tmp"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 CI=true \
      bash -c "cd /work/hetkern && $*"
  ' run_in_root "$root" "$@"
}

echo "fresh-machine-check: make demo (commit ${commit:0:12})"
t2=$(seconds)
run_in_root make demo
t3=$(seconds)
echo "fresh-machine-check: make test"
run_in_root make test
t4=$(seconds)

printf '\nfresh-machine-check passed on a minimal bookworm root (commit %s)\n' "${commit:0:12}"
printf '  %-28s %6s s\n' "root (mmdebstrap)" "$(elapsed "$t0" "$t1")" \
  "make demo" "$(elapsed "$t2" "$t3")" "make test" "$(elapsed "$t3" "$t4")"
