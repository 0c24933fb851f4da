#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The option tables of mercuryd's commands are the truth (daemon/cli/cli_opts.h): every option
# each command's --help lists is documented in man/mercuryd.8 and completed by the bash
# completion, and neither the man page nor
# the README's mercuryd lines name an option no command has.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${MERCURYD:-${MERCURY_BUILD:-$root/build}/mercuryd}
[ -x "$bin" ] || { echo "SKIP: $bin not built"; exit 77; }
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

# roff to text: \- is a hyphen, \fB.. font changes
man=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' "$root/man/mercuryd.8")
cmds=$("$bin" --help | awk '/^Commands:/ { f = 1; next } /^$/ { f = 0 } f && /^  [a-z]/ { print $1 }')
check "mercuryd --help lists the commands ($(echo $cmds))" "[ $(echo "$cmds" | wc -w) -ge 7 ]"
known=" json verbose pin-root help version "
for c in $cmds; do
	opts=$("$bin" "$c" --help | awk '/^Options:/ { f = 1; next } /^$/ { f = 0 } f && /^  --/ { print substr($1, 3) }')
	for o in $opts; do
		known+="$o "
		check "man page documents $c --$o" "grep -qE -- '--$o([^a-z-]|\$)' <<<\"\$man\""
		check "bash completion offers $c --$o" "grep -qE -- '--$o([^a-z-]|\$)' '$root/completion/mercuryd.bash'"
	done
	check "man page has a section for $c" "grep -qE '^\\.B $c|^\\.SS $c|^$c' <<<\"\$man\""
done
for o in $(grep -oE -- '--[a-z][a-z-]*' <<<"$man" | sort -u); do
	check "man page's $o is an option of mercuryd" "[[ '$known' == *' ${o#--} '* ]]"
done
for o in $(grep -E 'mercuryd [a-z-]' "$root/README.md" | grep -oE -- ' --[a-z][a-z-]*' | sort -u); do
	check "README's mercuryd $o is an option of mercuryd" "[[ '$known' == *' ${o#--} '* ]]"
done
[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
