# Shell helpers for hack/ scripts that run an agent under a cgroupRoot of
# their own (hack/demo.sh, hack/e2enode/run.sh). Source it.

# rm_cgroup_root ROOT WHO removes the cgroup ROOT (e.g. /kltest1234-demo)
# in every hierarchy, children first, once nothing runs in it; what cannot
# be removed is named on stderr after "WHO:".
rm_cgroup_root() {
  local root=$1 who=$2 h d
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    d="${h%/}$root"
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    [ -d "$d" ] && echo "$who: could not remove cgroup $d" >&2 2>/dev/null
  done
  return 0
}
