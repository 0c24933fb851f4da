# SPDX-License-Identifier: BSD-2-Clause
# bash completion for mercuryd(8): commands, their options, interface names, qdisc backends.
# Installed by `make install` into share/bash-completion/completions/mercuryd.

_mercuryd_ifaces() {
	local d
	for d in /sys/class/net/*; do [ -e "$d" ] && printf '%s\n' "${d##*/}"; done
}

# Interfaces with an attach record under the pin root (detach, status).
_mercuryd_attached() {
	local root=${1:-/sys/fs/bpf/mercury} d
	for d in "$root"/*/attach_state; do [ -e "$d" ] && { d=${d%/attach_state}; printf '%s\n' "${d##*/}"; }; done
}

_mercuryd() {
	local cur prev cmd="" i pin_root=/sys/fs/bpf/mercury
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--pin-root) pin_root=${COMP_WORDS[i + 1]}; i=$((i + 1)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	case $prev in
	--pin-root | --textfile | --metrics-textfile | --cgroup) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--qdisc) COMPREPLY=($(compgen -W "auto mqprio prio ets htb tbf" -- "$cur")); return ;;
	--hook) COMPREPLY=($(compgen -W "auto tcx clsact" -- "$cur")); return ;;
	--dscp) COMPREPLY=($(compgen -W "off default" -- "$cur")); return ;;
	--dscp-guard) COMPREPLY=($(compgen -W "on off" -- "$cur")); return ;;
	--control) COMPREPLY=($(compgen -W "first default" -- "$cur")); return ;;
	--job-policy) COMPREPLY=($(compgen -W "share priority" -- "$cur")); return ;;
	--group) COMPREPLY=($(compgen -g -- "$cur")); return ;;
	--bands | --rate | --default-band | --pid | --fd | --next | --offset | --len | --level | --metrics-interval)
		return ;;
	esac
	if [ -z "$cmd" ]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-j --json -p --pretty -v --verbose -q --quiet --pin-root -h --help -V --version" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "attach detach status tag serve metrics fastpath" -- "$cur"))
		fi
		return
	fi
	case $cmd in
	attach)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--qdisc --bands --rate --default-band --hook --dscp --dscp-guard --control --job-policy --force --from --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_mercuryd_ifaces)" -- "$cur"))
		fi ;;
	detach | status)
		if [[ $cur == -* ]]; then
			[ "$cmd" = detach ] && COMPREPLY=($(compgen -W "--all --help" -- "$cur")) ||
				COMPREPLY=($(compgen -W "--help" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_mercuryd_attached "$pin_root")" -- "$cur"))
		fi ;;
	tag) COMPREPLY=($(compgen -W "--pid --fd --next --offset --len --level --show --clear --help" -- "$cur")) ;;
	serve) COMPREPLY=($(compgen -W "--socket --group --metrics-textfile --metrics-interval --help" -- "$cur")) ;;
	metrics) COMPREPLY=($(compgen -W "--textfile --help" -- "$cur")) ;;
	fastpath)
		if [ "$prev" = fastpath ]; then
			COMPREPLY=($(compgen -W "attach detach --help" -- "$cur"))
		elif [ "$prev" = --cgroup ]; then
			COMPREPLY=($(compgen -d -- "$cur"))
		else
			COMPREPLY=($(compgen -W "--cgroup --help" -- "$cur"))
		fi ;;
	esac
}
complete -F _mercuryd mercuryd
