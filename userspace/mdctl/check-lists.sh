#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-lists.sh MDCTL DIR: every command that MDCTL registers (its help,
# and the help of each group) is in the bash completion and among the
# COMMANDS of the man page in DIR, and the completion offers no command
# that mdctl lacks; the completion of a command without subcommands offers
# every long option of its help. The command table is the truth; these two
# are written by hand and must follow it.
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

# The long options under "Options:" of a help text: "  -x, --name ..." and
# "      --name ...".
options_of() {
	sed -n '/^Options:$/,/^$/s/^  \(-., \|    \)\(--[a-z][a-z-]*\).*/\2/p'
}

# The lines of the completion from the case label that names $1 ("attach)",
# "list | devices | version)") to its ";;", with $node_opts written out.
completion_case() {
	awk -v cmd="$1" -v node_opts="$node_opts" '
		/^\t[a-z][a-z| -]*\)$/ {
			label = $0
			gsub(/[\t)]/, "", label)
			n = split(label, names, / \| /)
			for (i = 1; i <= n; i++)
				if (names[i] == cmd)
					found = 1
		}
		found { gsub(/\$node_opts/, node_opts); print }
		found && /;;/ { exit }' "$completion"
}

node_opts=$(sed -n 's/^[[:space:]]*local node_opts="\(.*\)"$/\1/p' "$completion")
top=$("$mdctl" help | names_after Commands)
[ -n "$top" ] || bad "'$mdctl help' lists no command"
entries=$(man_entries)
offered=$(sed -n 's/^[[:space:]]*local commands="\(.*\)"$/\1/p' "$completion")

for cmd in $top; do
	grep -qw -- "$cmd" <<<"$offered" || bad "the completion's commands lack '$cmd'"
	subs=$("$mdctl" "$cmd" --help | names_after Subcommands)
	if [ -z "$subs" ]; then
		grep -q "^$cmd\\b" <<<"$entries" || bad "the man page's COMMANDS lack '$cmd'"
		offers=$(completion_case "$cmd")
		for opt in $("$mdctl" "$cmd" --help | options_of); do
			grep -qw -- "$opt" <<<"$offers" ||
				bad "the completion of '$cmd' lacks '$opt'"
		done
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
