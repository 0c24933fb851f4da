#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The option tables of mercuryd's commands and of mercury-ps are the truth (common/cli_opts.h):
# every option each command's --help lists is documented in its man page (man/mercuryd.8,
# man/mercury-ps.1) and completed by its bash completion, and neither the man pages nor the
# README's mercuryd lines name an option no command has. Also the command line's contracts:
# -j before or after the command, an error printed once under -j, checked numbers, --version.
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
# the global options, from mercuryd --help's own list
known=" help $("$bin" --help | awk '/^Options:/ { f = 1; next } /^$/ { f = 0 } f && /^  (-[a-zA-Z], )?--/ { sub(/^  -[a-zA-Z], /, "  "); print substr($1, 3) }' | tr '\n' ' ') "
check "mercuryd --help lists the global options ($known)" "[[ '$known' == *' quiet '* && '$known' == *' pin-root '* ]]"
for c in $cmds; do
	opts=$("$bin" "$c" --help | awk '/^Options:/ { f = 1; next } /^$/ { f = 0 } f && /^  (-[a-zA-Z], )?--/ { sub(/^  -[a-zA-Z], /, "  "); print substr($1, 3) }')
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

# -j/-p after the command as before it; under -j an error is one JSON object on stdout only.
out=$("$bin" status -j 2>/dev/null)
check "mercuryd status -j prints JSON ($out)" "jq -e 'has(\"interfaces\") or has(\"error\")' <<<\"\$out\" >/dev/null"
check "mercuryd status -p prints indented JSON" "\"$bin\" status -p 2>/dev/null | head -1 | grep -qx '{'"
"$bin" status no-such-iface-$$ -j >"${TMPDIR:-/tmp}/cli.$$.out" 2>"${TMPDIR:-/tmp}/cli.$$.err"
rc=$?
check "an error under -j: exit 1, one JSON object on stdout (rc $rc)" "[ $rc -eq 1 ] && [ \$(wc -l <'${TMPDIR:-/tmp}/cli.$$.out') -eq 1 ] && jq -e .error '${TMPDIR:-/tmp}/cli.$$.out' >/dev/null"
check "... and nothing on stderr" "[ ! -s '${TMPDIR:-/tmp}/cli.$$.err' ]"
rm -f "${TMPDIR:-/tmp}/cli.$$.out" "${TMPDIR:-/tmp}/cli.$$.err"
check "mercuryd --help lists the exit statuses" "\"$bin\" --help | grep -q '^Exit status:' && \"$bin\" --help | grep -q '^  2  usage'"
check "man page has ENVIRONMENT and FILES with /etc/mercury/interfaces" "grep -q '^.SH ENVIRONMENT' '$root/man/mercuryd.8' && grep -q '^.I /etc/mercury/interfaces' '$root/man/mercuryd.8'"

# mercury-ps: one option table, its man page, its completion, checked numbers.
ps=${MERCURY_PS:-$(dirname "$bin")/mercury-ps}
if [ -x "$ps" ]; then
	psman=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' "$root/man/mercury-ps.1")
	psopts=$("$ps" --help | awk '/^Options:/ { f = 1; next } /^$/ { f = 0 } f && /^  (-[a-zA-Z], )?--/ { sub(/^  -[a-zA-Z], /, "  "); print substr($1, 3) }')
	check "mercury-ps --help lists its options ($(echo $psopts | wc -w))" "[ $(echo "$psopts" | wc -w) -ge 30 ]"
	psknown=" "
	for o in $psopts; do
		psknown+="$o "
		check "mercury-ps man page documents --$o" "grep -qE -- '--$o([^a-z-]|\$)' <<<\"\$psman\""
		check "mercury-ps completion offers --$o" "grep -qE -- '--$o([^a-z-]|\$)' '$root/completion/mercury-ps.bash'"
	done
	for o in $(grep -oE -- '--[a-z][a-z-]*' <<<"$psman" | sort -u); do
		check "mercury-ps man page's $o is an option of mercury-ps" "[[ '$psknown' == *' ${o#--} '* ]]"
	done
	for c in run serve local ideal; do
		check "mercury-ps man page has a section for $c" "grep -qE '^\\.B $c' '$root/man/mercury-ps.1'"
	done
	check "mercury-ps --version is mercuryd's version" "[ \"\$('$ps' --version | awk '{print \$2}')\" = \"\$('$bin' -V | awk '{print \$2}')\" ]"
	for bad in "--nodes abc" "--nodes 0" "--nodes 17" "--iters 1x" "--port 70000" "--rank -1" \
		"--time-scale abc" "--sock-prio -1" "--chunk 0" "--jobs ''"; do
		err=$(eval "'$ps' local --profile '$root/models/tiny.prof' $bad" 2>&1 >/dev/null)
		rc=$?
		check "mercury-ps local $bad: usage error, exit 2 ($err)" "[ $rc -eq 2 ] && grep -q -- '${bad%% *}' <<<\"\$err\""
	done
	comp() { bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _mercury_ps; echo "${COMPREPLY[*]}"' _ "$root/completion/mercury-ps.bash" "$@"; }
	check "mercury-ps completion: commands (lo -> local)" "[ \"\$(comp mercury-ps lo)\" = local ]"
	check "mercury-ps completion: modes (--mode m -> mercury)" "[ \"\$(comp mercury-ps run --mode m)\" = mercury ]"
else
	echo "FAIL: $ps not built"
	fails=$((fails + 1))
fi
[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
