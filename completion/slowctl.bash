# bash completion for slowctl(1)                                       -*- shell-script -*-

_slowctl_jobs()
{
        # The live jobs' ids, from the first column of "slowctl list".
        slowctl ${socket:+--socket "$socket"} list 2>/dev/null | awk 'NR > 1 { print $1 }'
}

_slowctl_ended()
{
        # The ids of jobs that ended, newest first: "slowctl list --all" shows the live jobs, an
        # empty line, then the last runs, of which those of jobs still live are left out.
        slowctl ${socket:+--socket "$socket"} list --all 2>/dev/null |
                awk '/^$/ { runs = 1; next } $1 !~ /^[0-9]+$/ { next } !runs { live[$1] = 1; next } !live[$1] && !seen[$1]++ { print $1 }'
}

_slowctl_queues()
{
        # The queues' names, from the first column of "slowctl queue ls".
        slowctl ${socket:+--socket "$socket"} queue ls 2>/dev/null | awk 'NR > 1 { print $1 }'
}

_slowctl_settings()
{
        # The settings' names, from the first column of "slowctl get"; the known ones when no
        # daemon answers.
        local names
        names=$(slowctl ${socket:+--socket "$socket"} get 2>/dev/null | awk '{ print $1 }')
        echo "${names:-$settings}"
}

_slowctl()
{
        local cur prev words cword
        _init_completion || return

        local commands="submit edit enqueue wait cancel release status list history log get set queue
                stats top rq metrics pause resume suspend continue signal restart reload reexec nodes ping
                version help"
        local settings="min-threads max-threads vslow-percentage idle-timeout history-limit log-limit
                kill-grace stop-timeout max-connections-per-user max-log-bytes-per-user
                min-free-space max-queued-per-user max-running-per-user max-jobs-per-user
                max-job-bytes-per-user default-memory-max default-tasks-max default-cpu-weight
                default-nice default-open-files default-cpu-time max-job-memory max-job-tasks
                max-job-open-files max-job-cpu-time metrics-file metrics-interval on-end fair-share
                node-queues store-timeout"
        local global_opts="--socket --json --help --version"
        local i command="" socket="" command_index=0

        for ((i = 1; i < cword; i++)); do
                case ${words[i]} in
                --socket)
                        socket=${words[i + 1]}
                        ((i++))
                        ;;
                -*) ;;
                *)
                        command=${words[i]}
                        command_index=$i
                        break
                        ;;
                esac
        done

        # The named queue of --queue, wherever it comes.
        if [[ $prev == --queue ]]; then
                COMPREPLY=($(compgen -W "$(_slowctl_queues)" -- "$cur"))
                return
        fi

        if [[ -z $command ]]; then
                case $prev in
                --socket)
                        _filedir
                        return
                        ;;
                esac
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "$global_opts" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
                fi
                return
        fi

        case $command in
        submit)
                # After "--" comes the command to run: complete it as a command line.
                for ((i = command_index + 1; i < cword; i++)); do
                        if [[ ${words[i]} == -- ]]; then
                                _command_offset $((i + 1))
                                return
                        fi
                done
                case $prev in
                --cwd)
                        _filedir -d
                        return
                        ;;
                --after | --after-any)
                        COMPREPLY=($(compgen -W "$(_slowctl_jobs)" -- "$cur"))
                        return
                        ;;
                --key | --name | --delay | --timeout | --plugin | --entry | --arg | --memory-max | \
                        --tasks-max | --cpu-weight | --nice | --open-files | --cpu-time | \
                        --retries | --retry-delay | --every | --cron | --priority | --on-end)
                        return
                        ;;
                esac
                COMPREPLY=($(compgen -W "--very-slow --key --name --delay --timeout --wait
                        --hold --persist --cwd --plugin --entry --arg --stdin --memory-max
                        --tasks-max --cpu-weight --nice --open-files --cpu-time --after
                        --after-any --retries --retry-delay --every --cron --queue --priority
                        --stashed --on-end --node --help --" \
                        -- "$cur"))
                ;;
        edit)
                for ((i = command_index + 1; i < cword; i++)); do
                        if [[ ${words[i]} == -- ]]; then
                                _command_offset $((i + 1))
                                return
                        fi
                done
                case $prev in
                --cwd)
                        _filedir -d
                        return
                        ;;
                --command | --name | --priority)
                        return
                        ;;
                esac
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--command --name --priority --cwd --help --" \
                                -- "$cur"))
                elif ((cword == command_index + 1)); then
                        COMPREPLY=($(compgen -W "$(_slowctl_jobs)" -- "$cur"))
                fi
                ;;
        enqueue)
                [[ $prev == --key || $prev == --queue ]] && return
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--key --queue --help" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$(_slowctl_jobs)" -- "$cur"))
                fi
                ;;
        wait)
                [[ $prev == --queue ]] && return
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--all --queue --help" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$(_slowctl_jobs)" -- "$cur"))
                fi
                ;;
        help)
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--help" -- "$cur"))
                elif ((cword == command_index + 1)); then
                        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
                fi
                ;;
        cancel | release | status)
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--help" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$(_slowctl_jobs)" -- "$cur"))
                fi
                ;;
        nodes)
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--help" -- "$cur"))
                elif ((cword == command_index + 1)); then
                        COMPREPLY=($(compgen -W "forget" -- "$cur"))
                fi
                ;;
        suspend | continue)
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--help" -- "$cur"))
                elif ((cword == command_index + 1)); then
                        COMPREPLY=($(compgen -W "$(_slowctl_jobs)" -- "$cur"))
                fi
                ;;
        restart)
                # After "--" comes the program an argv job runs instead.
                for ((i = command_index + 1; i < cword; i++)); do
                        if [[ ${words[i]} == -- ]]; then
                                _command_offset $((i + 1))
                                return
                        fi
                done
                [[ $prev == --command ]] && return
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--command --help --" -- "$cur"))
                elif ((cword == command_index + 1)); then
                        COMPREPLY=($(compgen -W "$(_slowctl_ended)" -- "$cur"))
                fi
                ;;
        signal)
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--help" -- "$cur"))
                elif ((cword == command_index + 1)); then
                        COMPREPLY=($(compgen -W "$(_slowctl_jobs)" -- "$cur"))
                elif ((cword == command_index + 2)); then
                        COMPREPLY=($(compgen -W "HUP INT QUIT USR1 USR2 TERM KILL ALRM WINCH" -- "$cur"))
                fi
                ;;
        pause)
                [[ $prev == --queue || $prev == --node ]] && return
                COMPREPLY=($(compgen -W "--wait --queue --node --help" -- "$cur"))
                ;;
        resume)
                [[ $prev == --queue || $prev == --node ]] && return
                COMPREPLY=($(compgen -W "--queue --node --help" -- "$cur"))
                ;;
        stats | rq)
                [[ $prev == --queue ]] && return
                COMPREPLY=($(compgen -W "--queue --help" -- "$cur"))
                ;;
        queue)
                if ((cword == command_index + 1)); then
                        COMPREPLY=($(compgen -W "add rm ls --help" -- "$cur"))
                elif [[ ${words[command_index + 1]} == add && $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--min-threads --max-threads --vslow-percentage
                                --idle-timeout --max-queued-per-user --max-running-per-user
                                --help" -- "$cur"))
                elif [[ ${words[command_index + 1]} == rm ]]; then
                        COMPREPLY=($(compgen -W "$(_slowctl_queues)" -- "$cur"))
                fi
                ;;
        log)
                [[ $prev == --run || $prev == --lines ]] && return
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "-f --follow --run --lines --raw --help" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$(_slowctl_jobs)" -- "$cur"))
                fi
                ;;
        list | history)
                case $prev in
                --outcome)
                        COMPREPLY=($(compgen -W "succeeded failed killed timed-out cancelled
                                interrupted" -- "$cur"))
                        return
                        ;;
                --since | -n | --limit)
                        return
                        ;;
                esac
                local opts="--failed --outcome --since -n --limit --help"
                [[ $command == list ]] && opts="--all $opts"
                COMPREPLY=($(compgen -W "$opts" -- "$cur"))
                ;;
        get)
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--queue --help" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$(_slowctl_settings)" -- "$cur"))
                fi
                ;;
        set)
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "--runtime --queue --help" -- "$cur"))
                elif (((cword - command_index) % 2 == 1)); then
                        # NAME VALUE pairs: a name goes in the odd places.
                        COMPREPLY=($(compgen -W "$(_slowctl_settings)" -- "$cur"))
                fi
                ;;
        *)
                COMPREPLY=($(compgen -W "--help" -- "$cur"))
                ;;
        esac
} &&
        complete -F _slowctl slowctl

# ex: filetype=sh
