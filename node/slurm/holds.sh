# holds.sh PORT JOB: succeeds when a process of Slurm job JOB listens on TCP
# port PORT here (see HoldsPort). POSIX sh, tr and ls only.
port=$1 job=$2
hex=$(printf '%04X' "$port")
inodes=
for f in /proc/net/tcp /proc/net/tcp6; do
  [ -r "$f" ] || continue
  while read -r sl local rem st rest; do
    [ "$st" = 0A ] && [ "${local##*:}" = "$hex" ] || continue
    set -- $rest
    inodes="$inodes $6"
  done < "$f"
done
[ -n "$inodes" ] || { echo "nothing listens on it"; exit 3; }
for p in /proc/[0-9]*; do
  e=$(tr '\0' '\n' < "$p/environ" 2>/dev/null) || continue
  case "
$e
" in *"
SLURM_JOB_ID=$job
"*) ;; *) continue ;; esac
  fds=$(ls -l "$p/fd" 2>/dev/null) || continue
  for i in $inodes; do
    case "$fds" in *"socket:[$i]"*) exit 0 ;; esac
  done
done
echo "another process listens on it"
exit 4
