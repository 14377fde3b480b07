#!/usr/bin/env bash
# make deb-test: install the labpool package into a fresh Debian root (mmdebstrap, cached as a
# tarball), check its files, user and unit, run the unit's ExecStart as its user with its sandbox
# approximated (no systemd as PID 1 here: see "approximated" below), in a pool with another agent
# in network namespaces; then upgrade, remove and purge. Root; about a minute with the cached root.
#
# Approximated from the unit, in a mount namespace around a chroot:
#   User=/Group=, NoNewPrivileges=, CapabilityBoundingSet=, AmbientCapabilities=, UMask=
#       setpriv --reuid/--regid/--init-groups, --no-new-privs, --bounding-set=-all, umask
#   ProtectSystem=strict   the root bind-mounted read-only; StateDirectory= and RuntimeDirectory=
#                          bound read-write on it
#   ProtectHome=, PrivateTmp=   empty tmpfs on /home, /root and /tmp
#   ProtectKernelTunables=      /proc/sys read-only
#   DevicePolicy=closed + DeviceAllow=char-nvidia*   a /dev with null, zero, full, random,
#                          urandom, tty and the /dev/nvidia* nodes present (stricter: no device
#                          cgroup here)
# Not approximated: SystemCallFilter=, RestrictAddressFamilies=, RestrictNamespaces=,
# MemoryDenyWriteExecute=, ProtectKernelModules/Logs=, ProtectClock=, ProtectControlGroups=
# (seccomp and the device cgroup need systemd); systemd-analyze checks their syntax only.
set -euo pipefail
: "${DEB_DIR:?}" "${DEB_VERSION:?}"
cd "$(dirname "$0")/../../.."
ROOT_TAR=${LABPOOL_DEB_ROOT:-build/artifacts/deb/bookworm-minbase.tar}
PEER_BIN=$(realpath "${LABPOOL_BIN:-bin/labpool}")
DEB=$(realpath "$DEB_DIR/labpool_${DEB_VERSION}_amd64.deb")
DESKTOP_DEB=$(realpath "$DEB_DIR/labpool-desktop_${DEB_VERSION}_amd64.deb")
[ "$(id -u)" = 0 ] || { echo "deb-test needs root (chroot, namespaces)"; exit 1; }

start=$(date +%s)
work=$(mktemp -d /tmp/labpool-deb.XXXXXX)
R=$work/root
ns=lpdeb$$
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for n in ${ns}a ${ns}b ${ns}sw; do ip netns del "$n" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
step() { echo "--- $*"; }
fail() {
	echo "deb-test: FAIL: $*" >&2
	for f in "$work"/*.log; do [ -f "$f" ] && { echo "== $f"; tail -n 30 "$f"; }; done >&2
	exit 1
}
in_root() { chroot "$R" "$@"; }
# as USER ARGS...: run a command in the root as a user, with their groups and home.
as() { local u=$1; shift; chroot "$R" setpriv --reuid="$u" --regid="$u" --init-groups env -i HOME="/home/$u" PATH=/usr/bin:/bin "$@"; }
# wait_for SECONDS DESCRIPTION COMMAND...: until the command succeeds.
wait_for() {
	local n=$(($1 * 5)) what=$2; shift 2
	for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
	fail "waited $((n / 5)) s for $what"
}

step "a fresh Debian root"
if [ ! -s "$ROOT_TAR" ]; then
	mkdir -p "$(dirname "$ROOT_TAR")"
	t=$(date +%s)
	mmdebstrap --quiet --format=tar --variant=minbase --include=adduser,systemd,passwd bookworm "$ROOT_TAR.part"
	mv "$ROOT_TAR.part" "$ROOT_TAR"
	echo "made $ROOT_TAR in $(($(date +%s) - t)) s (kept for the next run)"
fi
mkdir "$R" && tar -C "$R" -xf "$ROOT_TAR"

step "install"
cp "$DEB" "$R/tmp/labpool.deb"
in_root dpkg -i /tmp/labpool.deb >"$work/dpkg.log" 2>&1 || fail "dpkg -i"
for f in /usr/bin/labpool /usr/lib/systemd/system/labpool.service /usr/lib/sysctl.d/60-labpool.conf; do
	in_root dpkg -L labpool | grep -x "$f" >/dev/null || fail "dpkg -L labpool does not list $f"
	[ -f "$R$f" ] || fail "$f missing"
done
[ "$(readlink "$R/usr/bin/labpool-agent")" = /usr/bin/labpool ] || fail "/usr/bin/labpool-agent is not a link to labpool"
in_root /usr/bin/labpool version | grep . >/dev/null || fail "labpool version"
grep -qx 'net.core.rmem_max = 7500000' "$R/usr/lib/sysctl.d/60-labpool.conf" || fail "sysctl drop-in"
IFS=: read -r _ _ uid gid _ home shell < <(in_root getent passwd labpool) || fail "no user labpool"
[ "$uid" -lt 1000 ] && [ "$home" = /var/lib/labpool ] && [ "$shell" = /usr/sbin/nologin ] ||
	fail "user labpool: uid $uid home $home shell $shell, want a system user, /var/lib/labpool, nologin"
[ "$(in_root getent group labpool | cut -d: -f3)" = "$gid" ] || fail "group labpool is not the user's group"
[ -L "$R/etc/systemd/system/multi-user.target.wants/labpool.service" ] || fail "the unit is not enabled"
echo "files, user labpool ($uid:$gid, nologin), the unit enabled"

step "the unit"
unshare --mount --propagation private sh -c "mount -t proc proc '$R/proc' && chroot '$R' systemd-analyze verify /usr/lib/systemd/system/labpool.service" \
	>"$work/verify.log" 2>&1 || fail "systemd-analyze verify: $(cat "$work/verify.log")"
score=$(chroot "$R" systemd-analyze security --offline=true /usr/lib/systemd/system/labpool.service 2>/dev/null | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 2.0) }' || fail "exposure $score, want at most 2.0"
echo "systemd-analyze verify: clean; security --offline=true: $score"
execstart=$(sed -n 's/^ExecStart=//p' "$R/usr/lib/systemd/system/labpool.service")
unituser=$(sed -n 's/^User=//p' "$R/usr/lib/systemd/system/labpool.service")
unitenv=$(sed -n 's/^Environment=//p' "$R/usr/lib/systemd/system/labpool.service")

step "two hosts: the packaged agent (sandboxed) and a peer"
ip netns add ${ns}sw && ip -n ${ns}sw link add br0 type bridge && ip -n ${ns}sw link set br0 up
i=0
for side in a b; do
	i=$((i + 1))
	ip netns add $ns$side
	ip link add ${ns}v$i type veth peer name ${ns}p$i
	ip link set ${ns}v$i netns $ns$side && ip link set ${ns}p$i netns ${ns}sw
	ip -n ${ns}sw link set ${ns}p$i master br0 up
	ip -n $ns$side link set ${ns}v$i name eth0
	ip -n $ns$side addr add 10.231.0.$i/24 dev eth0
	ip -n $ns$side link set eth0 multicast on up && ip -n $ns$side link set lo up
done
mkdir -p "$R/run/labpool"
chown "$uid:$gid" "$R/run/labpool" && chmod 0755 "$R/run/labpool"          # RuntimeDirectory=
mkdir -p "$R/var/lib/labpool"
chown "$uid:$gid" "$R/var/lib/labpool" && chmod 0700 "$R/var/lib/labpool" # StateDirectory=

# start_agent: the unit's ExecStart, as its user, in its sandbox (see the top), in namespace a.
start_agent() {
	ip netns exec ${ns}a unshare --mount --propagation private bash -euc '
		R=$1 user=$2 env=$3 cmd=$4
		mount --bind "$R" "$R"
		for d in var/lib/labpool run/labpool; do mount --bind "$R/$d" "$R/$d"; done
		mount -o remount,bind,ro "$R"
		mount -t proc proc "$R/proc" && mount --bind "$R/proc/sys" "$R/proc/sys" && mount -o remount,bind,ro "$R/proc/sys"
		mount -t sysfs sysfs "$R/sys"
		for d in tmp home root; do mount -t tmpfs -o mode=1777 tmpfs "$R/$d"; done
		mount -t tmpfs -o mode=0755 tmpfs "$R/dev"
		for n in null zero full random urandom tty /dev/nvidia*; do
			n=/dev/${n#/dev/}; [ -e "$n" ] || continue
			touch "$R$n" && mount --bind "$n" "$R$n"
		done
		umask 077
		exec chroot "$R" setpriv --reuid="$user" --regid="$user" --init-groups --no-new-privs \
			--bounding-set=-all --inh-caps=-all env -i PATH=/usr/bin:/bin $env LABPOOL_SIMULATE_GPUS=1 $cmd
	' _ "$R" "$unituser" "$unitenv" "$execstart" >>"$work/system-agent.log" 2>&1 &
	agent_pid=$!
	pids+=("$agent_pid")
	wait_for 30 "the system agent's socket" in_root /usr/bin/labpool nodes
}
stop_agent() {
	kill -TERM "$agent_pid"
	wait "$agent_pid" || true
}
start_agent
sock=$R/run/labpool/labpool.sock
[ "$(stat -c '%a %u %g' "$sock")" = "660 $uid $gid" ] || fail "socket: $(stat -c '%a %u %g' "$sock"), want 660 $uid $gid (labpool)"
grep -q 'serving the machine.s admins' "$work/system-agent.log" || fail "the agent does not serve the system socket"
st=/proc/$agent_pid/status
grep -q "^Uid:[[:space:]]*$uid[[:space:]]" "$st" && grep -q "^Groups:[[:space:]]*$gid[[:space:]]*$" "$st" &&
	grep -q '^NoNewPrivs:[[:space:]]*1' "$st" && grep -q '^CapBnd:[[:space:]]*0000000000000000' "$st" &&
	grep -q '^CapEff:[[:space:]]*0000000000000000' "$st" || fail "the agent runs with: $(grep -E '^(Uid|Groups|NoNewPrivs|Cap)' "$st")"
[ "$(readlink /proc/$agent_pid/exe)" = "$R/usr/bin/labpool" ] || fail "the agent is $(readlink /proc/$agent_pid/exe), not the package's"
if ip netns exec ${ns}a nsenter --mount=/proc/$agent_pid/ns/mnt touch "$R/usr/bin/x" 2>/dev/null; then fail "the agent's root is writable"; fi
echo "the agent: uid $uid, groups $gid, no capabilities, no new privileges, its root read-only"

ip netns exec ${ns}b env LABPOOL_SIMULATE_GPUS=1 "$PEER_BIN" --data "$work/peer" agent --iface eth0 --name peer >"$work/peer.log" 2>&1 &
pids+=($!)
peer() { ip netns exec ${ns}b "$PEER_BIN" --data "$work/peer" "$@"; }
wait_for 30 "the peer" peer nodes
code=$(peer pool create | tail -n 1)
in_root /usr/bin/labpool pool join "$code" >"$work/join.log" 2>&1 || fail "root's labpool pool join through the system socket: $(cat "$work/join.log")"
sees() { in_root /usr/bin/labpool gpus | grep "$1" >/dev/null && peer gpus | grep "$2" >/dev/null; }
sysname=$(in_root /usr/bin/labpool pool members | awk '/ this machine / { print $1; exit }')
wait_for 60 "each agent to see the other's GPUs" sees peer "$sysname"
echo "the packaged agent ($sysname) and the peer see each other's GPUs"

step "who administers the machine"
in_root useradd -m -G labpool alice && in_root useradd -m bob
as alice /usr/bin/labpool policy >"$work/alice.log" 2>&1 || fail "alice (group labpool): policy: $(cat "$work/alice.log")"
as alice /usr/bin/labpool nodes | grep peer >/dev/null || fail "alice does not see the pool"
if as bob /usr/bin/labpool nodes >"$work/bob.log" 2>&1; then fail "bob, outside group labpool, read the system agent"; fi
grep -q 'adduser bob labpool' "$work/bob.log" || fail "bob is not told how to join: $(cat "$work/bob.log")"
if as bob /usr/bin/labpool agent >"$work/bob-agent.log" 2>&1; then fail "bob started a second agent for the machine"; fi
echo "alice (group labpool) administers; bob is told: $(head -n 1 "$work/bob.log")"

step "upgrade: identity, replica and pool kept"
before=$(in_root /usr/bin/labpool pool members | awk 'NR > 1 { print $1 }' | sort)
key=$(cd "$R/var/lib/labpool" && find . -type f ! -name '*.log' ! -name 'replica.db*' -exec sha256sum {} + | sort)
stop_agent
mkdir "$work/v2" && dpkg-deb -R "$DEB" "$work/v2"
sed -i "s/^Version: .*/Version: ${DEB_VERSION}+upgrade/" "$work/v2/DEBIAN/control"
dpkg-deb -b "$work/v2" "$R/tmp/labpool-v2.deb" >/dev/null
in_root dpkg -i /tmp/labpool-v2.deb >>"$work/dpkg.log" 2>&1 || fail "dpkg -i (upgrade)"
[ "$(in_root dpkg-query -W -f '${Version}' labpool)" = "${DEB_VERSION}+upgrade" ] || fail "not upgraded"
[ "$(in_root id -u labpool)" = "$uid" ] || fail "the upgrade changed the user's uid"
[ "$key" = "$(cd "$R/var/lib/labpool" && find . -type f ! -name '*.log' ! -name 'replica.db*' -exec sha256sum {} + | sort)" ] || fail "the upgrade changed the identity"
start_agent
[ "$before" = "$(in_root /usr/bin/labpool pool members | awk 'NR > 1 { print $1 }' | sort)" ] || fail "the pool's members changed across the upgrade"
wait_for 60 "the peer again after the upgrade" sees peer "$sysname"
echo "same identity, same pool, the peer's GPUs seen again"

step "remove keeps the state; purge deletes it"
stop_agent
in_root dpkg -r labpool >>"$work/dpkg.log" 2>&1 || fail "dpkg -r"
[ ! -e "$R/usr/bin/labpool" ] || fail "remove left the binary"
[ -f "$R/var/lib/labpool/replica.db" ] || fail "remove deleted the replica"
in_root dpkg -P labpool >>"$work/dpkg.log" 2>&1 || fail "dpkg -P"
[ ! -e "$R/var/lib/labpool" ] || fail "purge left /var/lib/labpool"
echo "remove: state kept; purge: state gone"

step "labpool-desktop (contents only: its GTK and WebKit dependencies are not in this root)"
deps=$(dpkg-deb -f "$DESKTOP_DEB" Depends)
for d in "labpool (= $DEB_VERSION)" libgtk-3-0 libwebkit2gtk-4.1-0; do
	case ", $deps," in *", $d,"*) ;; *) fail "labpool-desktop does not depend on $d: $deps" ;; esac
done
files=$(dpkg-deb -c "$DESKTOP_DEB")
grep -q '\./usr/bin/labpool-desktop$' <<<"$files" || fail "no /usr/bin/labpool-desktop"
grep -q '\./usr/share/applications/labpool.desktop$' <<<"$files" || fail "no desktop entry"
echo "depends on $deps; the window and its menu entry"

echo "deb-test: ok in $(($(date +%s) - start)) s"
