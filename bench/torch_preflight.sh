# SPDX-License-Identifier: BSD-2-Clause
# Sourced by the real-training benchmarks: torch_preflight NAME LAST_HELP_LINE "$@" prints the
# script's header comment (lines 3 to LAST_HELP_LINE, after the licence line) for -h/--help
# and exits, and refuses to go on without root (namespaces) or Debian's torch and torchvision.
torch_preflight() {
	local name=$1 last=$2
	shift 2
	case "${1:-}" in -h | --help)
		sed -n "3,${last}p" "$0" | cut -c3-
		exit 0
		;;
	esac
	[ "$(id -u)" -eq 0 ] || { echo "$name: needs root (namespaces)" >&2; exit 1; }
	/usr/bin/python3 -c 'import torch, torchvision' || { echo "$name: run make deps" >&2; exit 1; }
}
