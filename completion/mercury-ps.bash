# SPDX-License-Identifier: BSD-2-Clause
# bash completion for mercury-ps(1): commands, options, modes, placements, profile files.
# Installed by `make install` into share/bash-completion/completions/mercury-ps.

_mercury_ps() {
	local cur prev cmd=""
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	[ "$COMP_CWORD" -gt 1 ] && cmd=${COMP_WORDS[1]}
	case $prev in
	--profile | --timeline) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--mode) COMPREPLY=($(compgen -W "fifo partition mercury" -- "$cur")); return ;;
	--placement) COMPREPLY=($(compgen -W "hash balanced" -- "$cur")); return ;;
	--nodes | --rank | --hosts | --port | --conns | --dscp-queues | --rcvbuf | --bands | --chunk | --part | \
		--credit | --op-cost | --bound | --shrink | --time-scale | --iters | --warmup | \
		--timeout | --rate | --uplink | --slow-rank | --slow-s | --die-rank | --sock-prio | \
		--layers | --jobs | --job | --weight | --job-band)
		return ;;
	esac
	if [ -z "$cmd" ] || [ "$COMP_CWORD" -eq 1 ]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--help --version" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "run serve local ideal" -- "$cur"))
		fi
		return
	fi
	local common="--profile --mode --nodes --port --conns --dscp-queues --rcvbuf --bands --chunk --part
		--credit --op-cost --bound --split-all --placement --shrink --time-scale --iters
		--warmup --verify --timeout --timeline --sock-prio --write-ahead --pulls-below --pulls-alike --slow-rank --slow-s
		--die-rank --job --weight --job-band --help"
	case $cmd in
	run) COMPREPLY=($(compgen -W "$common --rank --hosts --local-direct --external-servers" -- "$cur")) ;;
	serve) COMPREPLY=($(compgen -W "$common --rank --hosts --layers --jobs --exit-with-parent" -- "$cur")) ;;
	local) COMPREPLY=($(compgen -W "$common --local-direct" -- "$cur")) ;;
	ideal) COMPREPLY=($(compgen -W "--profile --mode --nodes --rate --uplink --part --bound --split-all
		--placement --shrink --time-scale --help" -- "$cur")) ;;
	esac
}
complete -F _mercury_ps mercury-ps
