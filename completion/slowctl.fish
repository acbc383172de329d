# fish completion for slowctl(1)

# The --socket given on the command line so far, to ask the same daemon.
function __slowctl_socket
    set -l tokens (commandline -opc)
    set -l i (contains -i -- --socket $tokens)
    and set -q tokens[(math $i + 1)]
    and echo --socket $tokens[(math $i + 1)]
    string match -r -- '^--socket=.*' $tokens
end

# The live jobs' ids, from the first column of "slowctl list".
function __slowctl_jobs
    slowctl (__slowctl_socket) list 2>/dev/null | awk 'NR > 1 { print $1 }'
end

# The ids of jobs that ended, newest first: "slowctl list --all" shows the live jobs, an empty
# line, then the last runs, of which those of jobs still live are left out.
function __slowctl_ended
    slowctl (__slowctl_socket) list --all 2>/dev/null | awk '/^$/ { runs = 1; next } $1 !~ /^[0-9]+$/ { next } !runs { live[$1] = 1; next } !live[$1] && !seen[$1]++ { print $1 }'
end

# The settings' names, from the first column of "slowctl get"; the known ones when no daemon answers.
function __slowctl_settings
    set -l names (slowctl (__slowctl_socket) get 2>/dev/null | awk '{ print $1 }')
    test (count $names) -gt 0
    or set names min-threads max-threads vslow-percentage idle-timeout history-limit \
        log-limit kill-grace stop-timeout max-connections-per-user max-log-bytes-per-user \
        min-free-space max-queued-per-user max-running-per-user max-jobs-per-user \
        max-job-bytes-per-user default-memory-max default-tasks-max default-cpu-weight \
        default-nice default-open-files default-cpu-time max-job-memory max-job-tasks \
        max-job-open-files max-job-cpu-time metrics-file metrics-interval on-end fair-share \
        node-queues store-timeout
    printf '%s\n' $names
end

# The queues' names, from the first column of "slowctl queue ls".
function __slowctl_queues
    slowctl (__slowctl_socket) queue ls 2>/dev/null | awk 'NR > 1 { print $1 }'
end

# How many words other than options follow the command $argv[1] so far.
function __slowctl_args_after
    set -l args (commandline -opc | string match -v -- '-*')
    set -l i (contains -i -- $argv[1] $args)
    or return 1
    math (count $args) - $i
end

set -l commands submit edit enqueue wait cancel release status list history log get set queue stats top rq metrics pause resume suspend continue signal restart reload reexec nodes ping version help

complete -c slowctl -f
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -l socket -r -F -d "the daemon's socket"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -l json -d "print the daemon's replies as JSON"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -l version -d "print slowctl's version"
complete -c slowctl -l help -d "show the help"

complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a submit -d "queue a job and print its id"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a edit -d "change a job that has not started"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a enqueue -d "queue a live job again"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a wait -d "wait for jobs; exit with the last one's exit status"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a cancel -d "take jobs off the queue, or stop their runs"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a release -d "drop the handle kept by --persist"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a status -d "show a job, or the daemon"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a list -d "list the live jobs"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a history -d "list the last runs, newest first"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a log -d "print a job's output"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a get -d "show the settings, or one"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a set -d "change settings, all or nothing"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a queue -d "add, remove or list the named queues"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a stats -d "show the pool's statistics"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a top -d "a live view of the threads, the runs and the queues"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a rq -d "show the run queue as the kernel's /proc/slow_work_rq"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a metrics -d "print the metrics in Prometheus' text format"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a pause -d "start no new job until resume (running ones go on)"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a resume -d "start jobs again after pause"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a suspend -d "stop a running job's processes where they are"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a continue -d "let a suspended job's processes go on"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a signal -d "send a signal to a running job's processes"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a restart -d "run an ended job again, as a new job"
complete -c slowctl -n "__fish_seen_subcommand_from restart; and not contains -- -- (commandline -opc)" -l command -r -d "run this shell command instead"
complete -c slowctl -n "__fish_seen_subcommand_from restart; and test (__slowctl_args_after restart) -eq 0" -a "(__slowctl_ended)" -d "ended job"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a reload -d "make the daemon read its configuration file again"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a reexec -d "make the daemon execute its program again in place"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a nodes -d "list the nodes that share the job database"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a ping -d "check that the daemon answers"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a version -d "show slowctl's and the daemon's version"
complete -c slowctl -n "not __fish_seen_subcommand_from $commands" -a help -d "show the usage, or a command's usage and options"
complete -c slowctl -n "__fish_seen_subcommand_from help; and test (__slowctl_args_after help) -eq 0" -a "$commands" -d command

# submit: its options; after "--", the command to run.
set -l submit "__fish_seen_subcommand_from submit; and not contains -- -- (commandline -opc)"
complete -c slowctl -n $submit -l very-slow -d "run as very slow work"
complete -c slowctl -n $submit -l key -x -d "coalesce with your live job of this key"
complete -c slowctl -n $submit -l name -x -d "a label that list and status show"
complete -c slowctl -n $submit -l delay -x -d "queue it after S (90, 2m, 1h30m) or at a time (09:00)"
complete -c slowctl -n $submit -l timeout -x -d "stop a run after S (90, 2m, 1h30m)"
complete -c slowctl -n $submit -l wait -d "wait for the job; exit with its exit status"
complete -c slowctl -n $submit -l hold -d "keep the job while slowctl stays connected"
complete -c slowctl -n $submit -l persist -d "keep the job until it is released"
complete -c slowctl -n $submit -l cwd -x -a "(__fish_complete_directories)" -d "the directory to run in"
complete -c slowctl -n $submit -l plugin -x -d "run a plugin instead of a command"
complete -c slowctl -n $submit -l entry -x -d "the plugin's entry point"
complete -c slowctl -n $submit -l arg -x -d "the argument for the entry point (JSON)"
complete -c slowctl -n $submit -l stdin -d "submit each line of standard input as a command"
complete -c slowctl -n $submit -l memory-max -x -d "memory of a run at most (suffix K, M, G or T)"
complete -c slowctl -n $submit -l tasks-max -x -d "processes and threads of a run at most"
complete -c slowctl -n $submit -l cpu-weight -x -d "the run's share of CPU (1..10000)"
complete -c slowctl -n $submit -l nice -x -d "the run's niceness (-20..19)"
complete -c slowctl -n $submit -l open-files -x -d "open files of each process at most"
complete -c slowctl -n $submit -l cpu-time -x -d "CPU seconds of each process at most"
complete -c slowctl -n $submit -l after -x -a "(__slowctl_jobs)" -d "wait until these jobs (12,13) have succeeded"
complete -c slowctl -n $submit -l after-any -x -a "(__slowctl_jobs)" -d "wait until these jobs have ended"
complete -c slowctl -n $submit -l retries -x -d "run again after a failure, up to N times"
complete -c slowctl -n $submit -l retry-delay -x -d "wait S seconds before the first retry"
complete -c slowctl -n $submit -l every -x -d "run every S seconds, until released"
complete -c slowctl -n $submit -l cron -x -d "run at the times of a cron expression"
complete -c slowctl -n $submit -l queue -x -a "(__slowctl_queues)" -d "the named queue"
complete -c slowctl -n $submit -l priority -x -d "run before jobs of a lower priority (-100..100)"
complete -c slowctl -n $submit -l stashed -d "keep the job, not queued, until enqueue"
complete -c slowctl -n $submit -l node -x -d "run it on this node of the cluster alone"
complete -c slowctl -n $submit -l on-end -x -d "run this shell command after each run"
set -l edit "__fish_seen_subcommand_from edit; and not contains -- -- (commandline -opc)"
complete -c slowctl -n $edit -l command -x -d "the command the job runs instead"
complete -c slowctl -n $edit -l name -x -d "a label that list and status show"
complete -c slowctl -n $edit -l priority -x -d "run before jobs of a lower priority (-100..100)"
complete -c slowctl -n $edit -l cwd -x -a "(__fish_complete_directories)" -d "the directory to run in"
complete -c slowctl -n "__fish_seen_subcommand_from submit; and contains -- -- (commandline -opc)" -F

complete -c slowctl -n "__fish_seen_subcommand_from list" -l all -d "also the last runs"
complete -c slowctl -n "__fish_seen_subcommand_from list history" -l failed -d "runs that did not succeed"
complete -c slowctl -n "__fish_seen_subcommand_from list history" -l outcome -x -a "succeeded failed killed timed-out cancelled interrupted" -d "runs of this outcome"
complete -c slowctl -n "__fish_seen_subcommand_from list history" -l since -x -d "runs ended since (2h, or a local time)"
complete -c slowctl -n "__fish_seen_subcommand_from list history" -s n -l limit -x -d "at most N runs"
complete -c slowctl -n "__fish_seen_subcommand_from enqueue" -l key -x -d "the live job of this key"
complete -c slowctl -n "__fish_seen_subcommand_from enqueue edit wait cancel release status log suspend continue signal" -a "(__slowctl_jobs)" -d "job"
complete -c slowctl -n "__fish_seen_subcommand_from pause" -l wait -d "answer once no job is running any more (drain)"
complete -c slowctl -n "__fish_seen_subcommand_from pause resume" -l node -x -d "this node of the cluster only"
complete -c slowctl -n "__fish_seen_subcommand_from enqueue get set stats rq pause resume" -l queue -x -a "(__slowctl_queues)" -d "the named queue"
complete -c slowctl -n "__fish_seen_subcommand_from queue; and __fish_seen_subcommand_from rm" -a "(__slowctl_queues)" -d queue
complete -c slowctl -n "__fish_seen_subcommand_from queue; and test (__slowctl_args_after queue) -eq 0" -a "add rm ls"
complete -c slowctl -n "__fish_seen_subcommand_from queue" -l min-threads -x -d "the queue's threads at least"
complete -c slowctl -n "__fish_seen_subcommand_from queue" -l max-threads -x -d "the queue's threads at most"
complete -c slowctl -n "__fish_seen_subcommand_from queue" -l vslow-percentage -x -d "the share very slow jobs get"
complete -c slowctl -n "__fish_seen_subcommand_from queue" -l idle-timeout -x -d "idle threads go after S seconds"
complete -c slowctl -n "__fish_seen_subcommand_from queue" -l max-queued-per-user -x -d "a user's jobs queued in it at most"
complete -c slowctl -n "__fish_seen_subcommand_from queue" -l max-running-per-user -x -d "a user's jobs running in it at most"
complete -c slowctl -n "__fish_seen_subcommand_from log" -s f -l follow -d "keep printing while the job runs"
complete -c slowctl -n "__fish_seen_subcommand_from log" -l run -x -d "the log of run N"
complete -c slowctl -n "__fish_seen_subcommand_from log" -l lines -x -d "only the last N lines"
complete -c slowctl -n "__fish_seen_subcommand_from log" -l raw -d "control characters as they are"
complete -c slowctl -n "__fish_seen_subcommand_from wait" -l all -d "each of your live jobs that will end"
complete -c slowctl -n "__fish_seen_subcommand_from wait" -l queue -x -a "(__slowctl_queues)" -d "those of this queue only"
complete -c slowctl -n "__fish_seen_subcommand_from get; and test (__slowctl_args_after get) -eq 0" -a "(__slowctl_settings)" -d setting
complete -c slowctl -n "__fish_seen_subcommand_from set" -l runtime -d "change the running daemon only"
# NAME VALUE pairs: a name goes in the odd places.
complete -c slowctl -n "__fish_seen_subcommand_from set; and test (math (__slowctl_args_after set) % 2) -eq 0" -a "(__slowctl_settings)" -d setting
