# bash completion for vxc(1); installed as
# share/bash-completion/completions/vxc, where bash-completion loads it.

_vxc() {
  local cur prev cmd i
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  local commands="compile explain fetch ls inspect run stats log-stats zero-stats verify rm clear prune stop config help"
  # the command: the first word after the global options
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --socket) ((i++)) ;;
      -*) ;;
      *) cmd=${COMP_WORDS[i]}; break ;;
    esac
  done
  case $prev in
    --socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    -o) COMPREPLY=($(compgen -f -- "$cur") $(compgen -W "-" -- "$cur")); return ;;
    -O) COMPREPLY=($(compgen -W "0 1 2 3" -- "$cur")); return ;;
    --warp-size) COMPREPLY=($(compgen -W "1 2 4 8 16 32" -- "$cur")); return ;;
    --target) COMPREPLY=($(compgen -W "vortex2-rv32 vortex2-rv64 vortex3-rv32 vortex3-rv64" -- "$cur")); return ;;
    --shared-libs) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --entry-point-result) COMPREPLY=($(compgen -W "void i32 i64 f32" -- "$cur")); return ;;
    --max-size | --kernel | --source-name | --limit | -e) return ;;
  esac
  if [[ -z $cmd ]]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "--socket --no-spawn --version --help" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$commands" -- "$cur"))
    fi
    return
  fi
  local opts=""
  case $cmd in
    compile) opts="-o -v --verbose --json -O --emit-ir --warp-size --shuffle-insns --target --source-name --host --recache --help" ;;
    fetch) opts="-o -v --verbose --json --kernel --help" ;;
    ls) opts="--json --limit --help" ;;
    inspect) opts="--json -d --disassemble --help" ;;
    run) opts="-e --entry-point-result --shared-libs -O --target --warp-size --shuffle-insns --recache --help" ;;
    stats | config) opts="--json --help" ;;
    prune) opts="--max-size --help" ;;
    help) COMPREPLY=($(compgen -W "$commands" -- "$cur")); return ;;
    *) opts="--help" ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ $cmd == compile || $cmd == run ]]; then
    COMPREPLY=($(compgen -f -X '!*.mlir' -- "$cur") $(compgen -d -- "$cur"))
  fi
}
complete -o filenames -F _vxc vxc
