# bash completion for chatlinkctl(1). Install as
# /usr/share/bash-completion/completions/chatlinkctl.

_chatlinkctl_rooms() {
  # Rooms come from the running daemon; nothing is offered when it is not reachable.
  local socket=("$@")
  chatlinkctl "${socket[@]}" rooms 2>/dev/null
}

_chatlinkctl_instances() {
  # The instances whose control sockets exist (chatlinkd@NAME: /run/chatlink/NAME.sock).
  local f
  for f in /run/chatlink/*.sock; do
    [[ -S $f && $f != /run/chatlink/control.sock ]] || continue
    f=${f##*/}
    printf '%s\n' "${f%.sock}"
  done
}

_chatlinkctl() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion -n = || return
  else
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi

  local verbs="status send join leave rooms history follow reconnect ping metrics instances help"
  local globals="--socket --instance -i --json --help -h"

  # The verb is the first word that is neither an option nor an option's value; remember
  # --socket or --instance so dynamic completions ask the same daemon.
  local verb="" i socket=()
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      --socket) socket=(--socket "${words[i + 1]}"); ((i++)) ;;
      --socket=*) socket=("${words[i]}") ;;
      --instance | -i) socket=(--instance "${words[i + 1]}"); ((i++)) ;;
      --instance=*) socket=("${words[i]}") ;;
      --room | --id | --since | --limit | --runtime-directory | --timeout) ((i++)) ;;
      -*) ;;
      *) if [[ -z $verb ]]; then verb=${words[i]}; fi ;;
    esac
  done

  case $prev in
    --socket)
      if declare -F _filedir >/dev/null; then _filedir; else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      fi
      return
      ;;
    --room)
      mapfile -t COMPREPLY < <(compgen -W "$(_chatlinkctl_rooms "${socket[@]}")" -- "$cur")
      return
      ;;
    --instance | -i)
      mapfile -t COMPREPLY < <(compgen -W "$(_chatlinkctl_instances)" -- "$cur")
      return
      ;;
    --runtime-directory)
      mapfile -t COMPREPLY < <(compgen -d -- "$cur")
      return
      ;;
    --format)
      mapfile -t COMPREPLY < <(compgen -W "openmetrics prometheus" -- "$cur")
      return
      ;;
    --id | --since | --limit | --timeout) return ;;
  esac
  if [[ $cur == --socket=* ]]; then
    mapfile -t COMPREPLY < <(compgen -f -- "${cur#--socket=}")
    return
  fi

  local options
  case $verb in
    "") options="$globals --version" ;;
    status) options="$globals --watch" ;;
    send) options="$globals --room --wait --id" ;;
    join | leave | rooms | reconnect | ping) options=$globals ;;
    history) options="$globals --room --since --limit" ;;
    follow) options="$globals --room" ;;
    metrics) options="$globals --format" ;;
    instances) options="$globals --runtime-directory --timeout" ;;
    help)
      mapfile -t COMPREPLY < <(compgen -W "${verbs% help}" -- "$cur")
      return
      ;;
    *) return ;;
  esac

  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
  elif [[ -z $verb ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$verbs" -- "$cur")
  elif [[ $verb == join || $verb == leave ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_chatlinkctl_rooms "${socket[@]}")" -- "$cur")
  elif [[ $verb == send ]]; then
    mapfile -t COMPREPLY < <(compgen -W "-" -- "$cur")
  fi
}

complete -F _chatlinkctl chatlinkctl
