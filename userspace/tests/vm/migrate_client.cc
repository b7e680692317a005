// SPDX-License-Identifier: GPL-2.0
//
// migrate_client.cc - mdr-test-migrate: moves extents and drains devices on
// mdnode as an admin, from VM tests, and prints one line per extent moved:
//
//	mdr-test-migrate --node 192.0.2.2 --admin-key FILE
//		--stamp 1=/dev/vda --stamp 2=/dev/nvme0n1
//		pingpong:vol1:0:8:1:2:3 drain:1 stats
//
// Steps:
//   move:NAME:FIRST:COUNT:TO    one MOVE request
//   pingpong:NAME:FIRST:COUNT:A:B:ROUNDS
//                               ROUNDS times over the extents, one MOVE of
//                               one extent at a time: to A in even rounds,
//                               B in odd ones (to the other one when the
//                               extent is there already)
//   drain:DEV[:TO]              one DRAIN request
//   stats                       NODE_STATS, the migration counters
//   check                       the stamps of the freed places (below)
// Every extent moved prints
//   moved: index=I from=DEV:SECTOR to=DEV:SECTOR gen=G stall_us=U ms=M
// (ms: the whole request, as this client saw it), a drain
//   drained: dev=D moved=N remaining=R bytes=B stall_max_us=U status=S
// and at the end "summary: moves=N bytes=B max_stall_us=U mib_s=X" (the
// copy rate over the time spent in requests).
//
// --stamp ID=PATH: the device ID is PATH in this machine. Right after each
// move, the old place (now free) is overwritten with a pattern naming it;
// before each move and at "check" (and at the end) every stamped place that
// no later move has taken back is read and must still hold its pattern:
// nothing may write to the old place of an extent once its move is
// acknowledged. A place a later move took (as its new place) is dropped;
// a drain drops the stamps of every device but the drained one, since it
// does not say where it put the extents (the check before it still ran).
// A step that fails prints "STEP: error: ..." and the program exits 1.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "lib/client/rdma_client.h"
#include "lib/util/errors.h"
#include "lib/wire/wire.h"
#include "tests/vm/vm_client.h"

namespace {

namespace wire = mdr::wire;
using mdr::test::parse_u64;
using mdr::test::split;

double now_s()
{
	return std::chrono::duration<double>(
		std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A freed place, stamped.
struct Place {
	uint32_t dev;
	uint64_t sector;
	uint64_t bytes;
	auto operator<=>(const Place &) const = default;
};

class Stamps {
public:
	std::map<uint32_t, std::string> paths;

	void fill(const Place &p, std::vector<uint8_t> &buf) const
	{
		buf.resize(p.bytes);
		for (size_t i = 0; i < buf.size(); i += 16) {
			const uint64_t a = 0x6d64722d66726565ull ^ p.dev;	// "mdr-free"
			const uint64_t b = (p.sector << 9) + i;
			std::memcpy(&buf[i], &a, 8);
			std::memcpy(&buf[i + 8], &b, 8);
		}
	}

	bool io(const Place &p, bool write, std::vector<uint8_t> &buf)
	{
		auto it = paths.find(p.dev);
		if (it == paths.end())
			return true;	// not stamped
		const int fd = ::open(it->second.c_str(),
				      (write ? O_WRONLY : O_RDONLY) | O_DIRECT | O_CLOEXEC);
		if (fd < 0) {
			printf("stamp: error: %s: %s\n", it->second.c_str(), strerror(errno));
			return false;
		}
		void *mem = nullptr;
		if (posix_memalign(&mem, 4096, p.bytes)) {
			close(fd);
			return false;
		}
		if (write)
			std::memcpy(mem, buf.data(), p.bytes);
		const ssize_t n = write ? pwrite(fd, mem, p.bytes, off_t(p.sector << 9))
					: pread(fd, mem, p.bytes, off_t(p.sector << 9));
		if (!write && n == ssize_t(p.bytes))
			std::memcpy(buf.data(), mem, p.bytes);
		if (write && n == ssize_t(p.bytes))
			fdatasync(fd);
		free(mem);
		close(fd);
		if (n != ssize_t(p.bytes)) {
			printf("stamp: error: %s at sector %" PRIu64 ": %s\n", it->second.c_str(),
			       p.sector, n < 0 ? strerror(errno) : "short");
			return false;
		}
		return true;
	}

	// The place was freed by a move: stamp it.
	bool freed(const Place &p)
	{
		std::vector<uint8_t> buf;
		fill(p, buf);
		if (!io(p, true, buf))
			return false;
		if (paths.count(p.dev))
			stamped_.insert(p);
		return true;
	}

	// A move took the place again.
	void taken(const Place &p) { stamped_.erase(p); }

	// A drain took unknown places on the devices other than dev (its
	// reply does not name them): their stamps can no longer be told from
	// its copies. The stamps on dev stay.
	void forget_except(uint32_t dev)
	{
		std::erase_if(stamped_, [dev](const Place &p) { return p.dev != dev; });
	}

	// Every stamped place still holds its stamp.
	bool check()
	{
		bool ok = true;
		std::vector<uint8_t> want, got;

		for (const Place &p : stamped_) {
			fill(p, want);
			got.resize(p.bytes);
			if (!io(p, false, got))
				return false;
			if (got != want) {
				size_t off = 0;
				while (off < got.size() && got[off] == want[off])
					off++;
				printf("stamp: error: freed place dev=%u sector=%" PRIu64
				       " was written after its move (first difference at byte %zu)\n",
				       p.dev, p.sector, off);
				ok = false;
			}
		}
		checked_ += stamped_.size();
		return ok;
	}

	size_t size() const { return stamped_.size(); }
	uint64_t checked() const { return checked_; }

private:
	std::set<Place> stamped_;
	uint64_t checked_ = 0;
};

struct Totals {
	uint64_t moves = 0, bytes = 0, max_stall_us = 0;
	double busy_s = 0;
};

} // namespace

int main(int argc, char **argv)
{
	mdr::ClientOptions opts;
	std::string key_file;
	Stamps stamps;
	int i = 1;

	opts.role = MDR_ROLE_ADMIN;
	opts.timeout_ms = 120000;	// a move waits out silent leases
	for (; i < argc && argv[i][0] == '-'; i++) {
		std::string_view a = argv[i];
		uint64_t v;

		if (i + 1 >= argc) {
			fprintf(stderr, "usage: see the top of migrate_client.cc\n");
			return 2;
		}
		std::string val = argv[++i];
		if (mdr::test::connect_option(a, val, opts, key_file))
			continue;
		if (a == "--stamp" && val.find('=') != std::string::npos &&
		    parse_u64(val.substr(0, val.find('=')), v))
			stamps.paths[uint32_t(v)] = val.substr(val.find('=') + 1);
		else {
			fprintf(stderr, "bad option %s %s\n", argv[i - 1], val.c_str());
			return 2;
		}
	}

	std::unique_ptr<mdr::RdmaClient> c = mdr::test::connect_or_say(opts);
	if (!c || !mdr::test::prove_admin_key(*c, key_file))
		return 1;
	mdr::RdmaClient &cl = *c;

	Totals t;
	int failures = 0;
	auto fail = [&](const std::string &step, const std::string &msg, int err) {
		printf("%s: error: %s (%s)\n", step.c_str(), msg.c_str(),
		       mdr::errno_name(-err).c_str());
		failures++;
	};
	// One MOVE; 0, or the -errno of its refusal.
	auto move = [&](const std::string &step, const std::string &name, uint64_t first,
			uint32_t count, uint32_t to) -> int {
		if (!stamps.check()) {
			failures++;
			return -EIO;
		}
		const double t0 = now_s();
		auto r = cl.call(wire::MoveReq{.first = first, .count = count, .to_dev = to,
					       .flags = MDR_MOVE_F_BY_NAME, .name = name});
		const double secs = now_s() - t0;
		if (!r.ok())
			return r.error();
		const auto *rep = std::get_if<wire::MoveRep>(&r.value().body);
		if (!rep) {
			fail(step, "unexpected reply", -EPROTO);
			return -EPROTO;
		}
		const uint64_t bytes = rep->bytes / rep->extents.size();
		for (const wire::MovedExtent &x : rep->extents) {
			printf("moved: index=%" PRIu64 " from=%u:%" PRIu64 " to=%u:%" PRIu64
			       " gen=%" PRIu64 " stall_us=%u ms=%.0f\n",
			       x.index, x.old_dev, x.old_pstart, x.new_dev, x.new_pstart,
			       x.generation, x.stall_us, secs * 1000);
			stamps.taken({x.new_dev, x.new_pstart, bytes});
			if (!stamps.freed({x.old_dev, x.old_pstart, bytes}))
				failures++;
			t.max_stall_us = std::max<uint64_t>(t.max_stall_us, x.stall_us);
		}
		fflush(stdout);
		t.moves += rep->extents.size();
		t.bytes += rep->bytes;
		t.busy_s += secs;
		return 0;
	};

	for (; i < argc && failures == 0; i++) {
		const std::string step = argv[i];
		auto w = split(step);
		std::vector<uint64_t> n(w.size(), 0);
		bool nums = true;

		for (size_t k = 1; k < w.size(); k++)
			if (!(w[0] == "move" || w[0] == "pingpong") || k > 1)
				nums &= parse_u64(w[k], n[k]);
		if (!nums) {
			fail(step, "bad number", -EINVAL);
			break;
		}
		if (w[0] == "move" && w.size() == 5) {
			if (int err = move(step, w[1], n[2], uint32_t(n[3]), uint32_t(n[4])))
				fail(step, "move refused", err);
		} else if (w[0] == "pingpong" && w.size() == 7) {
			const uint32_t a = uint32_t(n[4]), b = uint32_t(n[5]);

			for (uint64_t round = 0; round < n[6] && !failures; round++)
				for (uint64_t x = n[2]; x < n[2] + n[3] && !failures; x++) {
					const uint32_t to = round % 2 ? b : a;
					int err = move(step, w[1], x, 1, to);
					// Already there: to the other one.
					if (err == -EINVAL)
						err = move(step, w[1], x, 1, to == a ? b : a);
					if (err)
						fail(step, "move of extent " + std::to_string(x) +
							   " refused", err);
				}
		} else if (w[0] == "drain" && (w.size() == 2 || w.size() == 3)) {
			if (!stamps.check()) {
				failures++;
				break;
			}
			const double t0 = now_s();
			auto r = cl.call(wire::DrainReq{.dev_id = uint32_t(n[1]),
							.to_dev = w.size() == 3 ? uint32_t(n[2]) : 0});
			const double secs = now_s() - t0;
			const auto *rep = r.ok() ? std::get_if<wire::DrainRep>(&r.value().body)
						 : nullptr;
			if (!rep) {
				fail(step, r.ok() ? "unexpected reply" : r.message(),
				     r.ok() ? -EPROTO : r.error());
				break;
			}
			printf("drained: dev=%u moved=%" PRIu64 " remaining=%" PRIu64
			       " bytes=%" PRIu64 " stall_max_us=%" PRIu64 " status=%s ms=%.0f\n",
			       rep->dev_id, rep->moved, rep->remaining, rep->bytes,
			       rep->stall_max_us, wire::status_name(rep->status).c_str(),
			       secs * 1000);
			stamps.forget_except(rep->dev_id);
			t.moves += rep->moved;
			t.bytes += rep->bytes;
			t.busy_s += secs;
			t.max_stall_us = std::max(t.max_stall_us, rep->stall_max_us);
			if (rep->status != MDR_ST_OK)
				fail(step, "drain stopped", wire::status_to_errno(rep->status));
		} else if (w[0] == "stats" && w.size() == 1) {
			auto r = cl.call(wire::NodeStatsReq{});
			const auto *s = r.ok() ? std::get_if<wire::NodeStatsRep>(&r.value().body)
					       : nullptr;
			if (!s) {
				fail(step, r.ok() ? "unexpected reply" : r.message(),
				     r.ok() ? -EPROTO : r.error());
				break;
			}
			printf("stats: moves_active=%" PRIu64 " moves_done=%" PRIu64
			       " moves_failed=%" PRIu64 " move_bytes=%" PRIu64
			       " stall_max_us=%" PRIu64 " stall_total_us=%" PRIu64 "\n",
			       s->moves_active, s->moves_done, s->moves_failed, s->move_bytes,
			       s->stall_max_us, s->stall_total_us);
		} else if (w[0] == "check" && w.size() == 1) {
			if (!stamps.check())
				failures++;
		} else {
			fail(step, "unknown step or wrong number of arguments", -EINVAL);
		}
		fflush(stdout);
	}
	if (!failures && !stamps.check())
		failures++;
	printf("summary: moves=%" PRIu64 " bytes=%" PRIu64 " max_stall_us=%" PRIu64
	       " mib_s=%.1f stamps_checked=%" PRIu64 " failures=%d\n",
	       t.moves, t.bytes, t.max_stall_us,
	       t.busy_s > 0 ? double(t.bytes) / (1 << 20) / t.busy_s : 0.0,
	       stamps.checked(), failures);
	return failures ? 1 : 0;
}
