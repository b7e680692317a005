// SPDX-License-Identifier: GPL-2.0
//
// mdr-wire-table - the message table of Documentation/wire-protocol.md,
// made from the codec's opcode table so that the two cannot drift.
//
//	mdr-wire-table			prints it
//	mdr-wire-table --check FILE	exit 1 when FILE's copy differs (CTest)
//	mdr-wire-table --update FILE	writes it into FILE
//
// In FILE the table stands between the lines kTableBegin and kTableEnd,
// a blank line on each side of it.
// Exit 0 ok, 1 the copy differs or FILE cannot be read or written, 2 usage.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "lib/wire/table.h"

namespace {

using mdr::wire::kTableBegin;
using mdr::wire::kTableEnd;

bool read_file(const char *path, std::string &out)
{
	std::ifstream in(path, std::ios::binary);
	std::ostringstream s;

	if (!in)
		return false;
	s << in.rdbuf();
	out = s.str();
	return true;
}

// Where the table's text starts and ends in doc (npos: no markers).
std::pair<size_t, size_t> table_span(const std::string &doc)
{
	const std::string begin = std::string(kTableBegin) + "\n";
	const size_t b = doc.find(begin);

	if (b == std::string::npos)
		return {std::string::npos, std::string::npos};
	const size_t from = b + begin.size();
	const size_t e = doc.find(kTableEnd, from);
	if (e == std::string::npos)
		return {std::string::npos, std::string::npos};
	return {from, e};
}

int run(const char *mode, const char *path)
{
	// blank lines around it: Markdown ends the table before the end line
	const std::string table = "\n" + mdr::wire::message_table() + "\n";
	std::string doc;

	if (!read_file(path, doc)) {
		std::fprintf(stderr, "mdr-wire-table: cannot read %s: %s\n", path,
			     std::strerror(errno));
		return 1;
	}
	const auto [from, to] = table_span(doc);
	if (from == std::string::npos) {
		std::fprintf(stderr, "mdr-wire-table: %s has no line\n  %s\n"
			     "followed by one\n  %s\n", path, kTableBegin, kTableEnd);
		return 1;
	}
	if (doc.compare(from, to - from, table) == 0)
		return 0;
	if (std::strcmp(mode, "--check") == 0) {
		std::fprintf(stderr, "mdr-wire-table: the message table of %s differs "
			     "from the codec's; it should read:\n%s\nRun: mdr-wire-table "
			     "--update %s\n", path, table.c_str(), path);
		return 1;
	}
	doc.replace(from, to - from, table);
	std::ofstream out(path, std::ios::binary | std::ios::trunc);
	if (!(out << doc) || !out.flush()) {
		std::fprintf(stderr, "mdr-wire-table: cannot write %s\n", path);
		return 1;
	}
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc == 1) {
		std::fputs(mdr::wire::message_table().c_str(), stdout);
		return 0;
	}
	if (argc == 3 && (std::strcmp(argv[1], "--check") == 0 ||
			  std::strcmp(argv[1], "--update") == 0))
		return run(argv[1], argv[2]);
	std::fprintf(stderr, "usage: mdr-wire-table [--check FILE | --update FILE]\n");
	return 2;
}
