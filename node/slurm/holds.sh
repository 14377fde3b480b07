# holds.sh PORT JOB ADDR: succeeds when every socket here that would take
# a TCP connection to ADDR:PORT (ADDR: the IPv4 address the tunnel dials,
# as /proc/net/tcp writes it: 8 hex digits, little-endian) belongs to a
# process of Slurm job JOB (see HoldsPort). Linux gives such a connection
# to a socket bound to ADDR, else to 0.0.0.0, else to :: or ::ffff:ADDR
# (unless that socket is IPv6-only: then nothing takes it). A socket of
# the job on the same port of another address or family (an IPv6-only
# [::]) proves nothing. POSIX sh, tr and ls only.
port=$1 job=$2 addr=$3
hex=$(printf '%04X' "$port")
# listening PATTERN FILE: the inodes of the sockets listening on PATTERN
listening() {
  pat=$1 file=$2
  [ -r "$file" ] || return 0
  while read -r sl local rem st rest; do
    [ "$st" = 0A ] && [ "$local" = "$pat" ] || continue
    set -- $rest
    echo "$6"
  done < "$file"
}
takers=$(listening "$addr:$hex" /proc/net/tcp)
[ -n "$takers" ] || takers=$(listening "00000000:$hex" /proc/net/tcp)
[ -n "$takers" ] || takers="$(listening "00000000000000000000000000000000:$hex" /proc/net/tcp6) $(listening "0000000000000000FFFF0000$addr:$hex" /proc/net/tcp6)"
takers=$(echo $takers)
[ -n "$takers" ] || { echo "nothing listens on it"; exit 3; }
fds=
for p in /proc/[0-9]*; do
  e=$(tr '\0' '\n' < "$p/environ" 2>/dev/null) || continue
  case "
$e
" in *"
SLURM_JOB_ID=$job
"*) ;; *) continue ;; esac
  fds="$fds $(ls -l "$p/fd" 2>/dev/null)"
done
for i in $takers; do
  case "$fds" in *"socket:[$i]"*) ;; *) echo "another process listens on it"; exit 4 ;; esac
done
exit 0
