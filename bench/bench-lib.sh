# Shared by the daemon benchmarks (sourced): the programs under test, a private folder, timing,
# medians, and a slowworkd of our own. Set `name` before sourcing.

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
slowworkd=$build/daemon/slowworkd
slowctl=$build/client/slowctl
plugins=$build/examples/plugins/.libs

for tool in "$slowworkd" "$slowctl"; do
	[ -x "$tool" ] || { echo "$name: build first: $tool is missing" >&2; exit 2; }
done
# In a build tree these are libtool's wrapper scripts: time the programs, not the wrappers.
unwrap() {
	local d b
	d=$(dirname "$1") b=$(basename "$1")
	if [ "$(head -c 2 "$1")" = "#!" ] && [ -x "$d/.libs/$b" ]; then echo "$d/.libs/$b"; else echo "$1"; fi
}
slowworkd=$(unwrap "$slowworkd")
slowctl=$(unwrap "$slowctl")
export LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

tmp=$(mktemp -d)
daemon_pid=
cleanup() {
	[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	[ "$(type -t cleanup_more)" = function ] && cleanup_more
	rm -rf "$tmp"
}
trap cleanup EXIT

now() { date +%s.%N; }
elapsed() { echo "$2 - $1" | bc -l; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# slowworkd with 4 threads (behind $daemon_prefix, if set), a history that keeps every run, and the extra arguments; its state
# folder is $state_dir (emptied first), $tmp/state unless the benchmark sets it.
start_daemon() {
	local state=${state_dir:-$tmp/state}
	rm -rf "$state" "$tmp/sock"
	${daemon_prefix:-} "$slowworkd" --socket "$tmp/sock" --state-dir "$state" --min-threads 4 --max-threads 4 \
		--history-limit 1000000 --plugin-dir "$plugins" "$@" 2>"$tmp/daemon.log" &
	daemon_pid=$!
	export SLOWWORK_SOCKET=$tmp/sock
	for _ in $(seq 200); do "$slowctl" ping >/dev/null 2>&1 && return; sleep 0.05; done
	echo "$name: slowworkd did not start" >&2; cat "$tmp/daemon.log" >&2; exit 1
}
stop_daemon() { kill "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=; }

# The pool's count of finished runs.
items_run() { "$slowctl" --json stats | sed 's/.*"items_run":\([0-9]*\).*/\1/'; }
# Waits until the pool has finished $1 runs in all.
wait_items_run() { while [ "$(items_run)" -lt "$1" ]; do sleep 0.01; done; }
# $1 lines of $2 (yes | head would die of SIGPIPE, which pipefail reports).
repeat() { awk -v n="$1" -v s="$2" 'BEGIN { for (i = 0; i < n; i++) print s }'; }

# verdict VALUE OP BOUND: "ok" when VALUE OP BOUND holds (OP is <=, <, >= or >), else "MISSED",
# and the miss is noted in a file (so that it counts from inside a command substitution too).
verdict() {
	if [ "$(echo "$1 $2 $3" | bc -l)" = 1 ]; then
		echo ok
	else
		echo MISSED
		echo "$1 $2 $3" >>"$tmp/missed"
	fi
}
# target LABEL VALUE OP BOUND: a line with the figure beside its target and its verdict.
target() {
	printf '    %-44s %10.3f  (target %s %s)  %s\n' "$1" "$2" "$3" "$4" "$(verdict "$2" "$3" "$4")"
}
# Ends the benchmark: exit status 1 when a target was missed.
bench_exit() {
	if [ -s "$tmp/missed" ]; then
		echo "$name: $(wc -l <"$tmp/missed") target(s) missed" >&2
		exit 1
	fi
	exit 0
}
