#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-lists.sh MDCTL DIR: every command that MDCTL registers (its help,
# and the help of each group) is in the bash completion and among the
# COMMANDS of the man page in DIR, and the completion offers no command
# that mdctl lacks. The command table is the truth; these two are written
# by hand and must follow it.
set -euo pipefail

mdctl=$1 dir=$2
completion=$dir/mdctl.bash-completion man=$dir/mdctl.8
failed=0

bad() {
	echo "check-lists: $*" >&2
	failed=1
}

# "  NAME      SUMMARY" lines after the heading $1 of a help text.
names_after() {
	sed -n "/^$1:\$/,/^\$/s/^  \\([a-z][a-z-]*\\) .*/\\1/p"
}

# The first line of each entry of the man page's COMMANDS, in words:
# "bind ID=/dev/X, unbind ID, devices" gives "bind ID=/dev/X", "unbind ID"
# and "devices", one a line.
man_entries() {
	awk '/^\.SH/ { in_commands = ($2 == "COMMANDS") }
	     in_commands && prev == ".TP" { print }
	     { prev = $0 }' "$man" |
		sed -e 's/^\.[A-Z]* //' -e 's/\\f[RPIB]//g' -e 's/\\-/-/g' -e 's/"//g' \
		    -e 's/, /\n/g' | sed 's/^ *//'
}

# The words of the first 'compgen -W' after the case label "$1)" of the
# completion: the subcommands of group $1.
completion_subcommands() {
	awk -v group="$1" '
		$1 == group ")" { found = 1; next }
		found && /compgen -W "/ {
			sub(/.*compgen -W "/, ""); sub(/".*/, ""); print; exit
		}' "$completion"
}

top=$("$mdctl" help | names_after Commands)
[ -n "$top" ] || bad "'$mdctl help' lists no command"
entries=$(man_entries)
offered=$(sed -n 's/^[[:space:]]*local commands="\(.*\)"$/\1/p' "$completion")

for cmd in $top; do
	grep -qw -- "$cmd" <<<"$offered" || bad "the completion's commands lack '$cmd'"
	subs=$("$mdctl" "$cmd" --help | names_after Subcommands)
	if [ -z "$subs" ]; then
		grep -q "^$cmd\\b" <<<"$entries" || bad "the man page's COMMANDS lack '$cmd'"
		continue
	fi
	words=$(completion_subcommands "$cmd")
	for sub in $subs; do
		grep -qw -- "$sub" <<<"$words" ||
			bad "the completion of '$cmd' lacks '$sub'"
		grep -q "^$cmd $sub\\b" <<<"$entries" ||
			bad "the man page's COMMANDS lack '$cmd $sub'"
	done
done
for cmd in $offered; do
	grep -qx -- "$cmd" <<<"$top" || bad "the completion offers '$cmd', which mdctl lacks"
done

[ $failed -eq 0 ] && echo "check-lists: $(wc -w <<<"$top") commands in the completion and the man page"
exit $failed
