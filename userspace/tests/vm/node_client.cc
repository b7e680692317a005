// SPDX-License-Identifier: GPL-2.0
//
// node_client.cc - mdr-test-node-client: drives mdnode over RDMA from a VM
// test, one step per argument, and prints one line per step. (It runs past
// 800 lines: each step is one branch of a single dispatch, which a reader
// of a VM test looks up in one place; what the clients share, connecting,
// proving a key, the replicas to follow, is in vm_client.{h,cc}.)
//
//	mdr-test-node-client --node 192.0.2.2 --tenant 1 open:db1 alloc:db1:7
//		read:db1:0:16 renew:db1 close:db1
//	mdr-test-node-client --node 192.0.2.2 --admin-key FILE create:db1:1G:1
//		info:db1 list devs stats delete:db1
//
// Steps (a volume named by NAME was opened by an earlier open: step):
//   open:NAME                 OPEN by name: volume_id, size, entries, rkey
//   alloc:NAME:INDEX          ALLOC: the entry it answers
//   read:NAME:FIRST:COUNT     one RDMA READ of COUNT entries, each verified
//   readat:ADDR:RKEY          READ 32 bytes at any address and rkey (forgery)
//   allocs:NAME:FIRST:COUNT   ALLOC of COUNT extents from FIRST, one at a
//                             time; each acknowledged entry is printed
//                             (and flushed) as soon as it is answered
//   allocbench:NAME:FIRST:COUNT:DEPTH
//                             a load of durable changes: ALLOC of COUNT
//                             extents from FIRST (each a new one: a
//                             journal record, or a record of the group's
//                             log) with DEPTH of them outstanding at once
//                             (at most the queue depth mdnode granted), a
//                             RENEW of the volume after every 16 so that
//                             a run longer than the lease keeps it; prints
//                             one line "allocbench: {JSON}": allocs, ok,
//                             errors, depth, elapsed_us (first send to
//                             last reply), updates_per_s (ok ALLOCs per
//                             second of it) and lat_us (p50, p99, max,
//                             mean: send to reply of each ALLOC, nearest
//                             rank), first_error when one failed
//   clock                     "clock: realtime_us=N": when the step before
//                             ended, on the guest's clock (CLOCK_REALTIME)
//   idle:MS[:RENEW_MS]        acknowledge pushes for MS milliseconds; with
//                             RENEW_MS, renew the lease of every opened
//                             volume (one RENEW each) that often, as a
//                             host's background does, and fail on the
//                             first renewal refused
//   renew:NAME, renewall (RENEW of volume 0), close:NAME, ping
//   churn:N                   N more connections, one after the other: each
//                             connects, pings and disconnects
//   create:NAME:SIZE:TENANT[:SHIFT], delete:NAME, info:NAME,
//   resize:NAME:SIZE, list, devs, stats
//                             (admin, after --admin-key; SHIFT: log2 of
//                             the extent size, mdnode's default without)
// A step that fails prints "NAME: error: ..." and the program exits 1 at
// the end of the steps (--keep-going) or at once. Every invalidation pushed
// is printed as it arrives ("push: ..."), before it is acknowledged; with
// --time, every step is followed by "time: STEP ms=N" (its duration).
// --no-ack: pushes are printed and never acknowledged (a host that keeps
// renewing and does not do its part: mdnode fences it).
// --timeout MS: how long to wait for each connect step, reply and READ
// (5000). --wire-version N: ask for wire versions up to N only (a host
// at version 1 gets no TRACK push: mdnode moves without a pre-copy).
// --retry MS: a step answered MDR_ST_AGAIN (a replica that does not lead
// or does not serve yet, a new leader that waits out the leases of the
// one before) is sent again every 5 ms, for up to MS ms from its first
// try; only its last answer is printed, followed by "retry: STEP tries=N".
// An alloc: step answered MDR_ST_STALE meanwhile opens its volume again.
// Started before a failover, with clock after the step, it tells when
// the new leader answered it.
// --follow ADDR[,ADDR...]: with --retry, the other replicas of a group (at
// --port), for steps that ride its leader changes: a step whose
// connection was lost or answered nothing in time, or that a replica
// answered MDR_ST_NOT_LEADER naming another leader, is tried again over
// a new connection, to the leader named, else to the next replica of
// --node and the list, in turn, within the step's retry window. The new
// connection proves the key again (a host's --key-file: a host of
// version 5 is told the leader, an unproven one of version 2 only AGAIN),
// every volume opened before is opened again, and it prints "follow:
// ADDR version=N (WHY)". A step whose answer was lost may have been done
// before it is sent again: an ALLOC answers the extent it mapped then,
// a create: fails with EEXIST.
//
// Hosts and their proof (wire version 3):
//   --key-file FILE    the host's key (16 to 64 bytes, trailing newlines
//                      stripped): the host asks for version 3 and sends
//                      HOST_AUTH right after connecting (every churn:
//                      connection too), and checks mdnode's proof; it
//                      prints "auth: ok", or "auth: error: ... (EPERM)"
//                      when mdnode refused, or "auth: error: mdnode's
//                      proof is wrong ... (EACCES)" and exits 1 without
//                      a step. Without it a host asks for version 2 at
//                      most (unauthenticated) unless --wire-version says.
//   --forge-mac        with --key-file: flip a bit of the proof sent
//   --record FILE      with --key-file: write the HOST_AUTH request sent
//                      (nonce and mac, 96 hex digits) to FILE
//   --replay FILE      send the HOST_AUTH request FILE holds (from
//                      --record on an earlier connection) instead
//   --skip-auth        ask for version 3 but send no HOST_AUTH: the steps
//                      go unproven (mdnode answers MDR_ST_PERM and cuts)
// An auth step's failure, as a step's, prints the status's name, as in
// "auth: error: authentication: MDR_ST_PERM (EPERM)" and
// "open: error: MDR_ST_PERM (EPERM)".
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "lib/auth/auth.h"
#include "lib/client/rdma_client.h"
#include "lib/util/errors.h"
#include "lib/util/json.h"
#include "lib/wire/wire.h"
#include "tests/vm/vm_client.h"

namespace {

namespace wire = mdr::wire;
using mdr::test::parse_u64;
using mdr::test::split;

struct Opened {
	wire::OpenRep rep;
};

void print_entry(const char *what, uint64_t index, const wire::Entry &e)
{
	printf("%s: index=%" PRIu64 " state=%u dev=%u pstart=%" PRIu64 " gen=%" PRIu64 "\n",
	       what, index, e.state, e.dev_id, e.pstart, e.generation);
}

std::string to_hex(std::span<const uint8_t> b)
{
	std::string s;
	char d[3];

	for (uint8_t c : b) {
		snprintf(d, sizeof(d), "%02x", c);
		s += d;
	}
	return s;
}

// What --record wrote: the nonce and the mac, in hex.
mdr::Result<wire::HostAuthReq> read_recorded(const std::string &path)
{
	FILE *f = fopen(path.c_str(), "re");
	char text[100] = {};
	wire::HostAuthReq r;

	if (!f)
		return mdr::Error(-errno, "cannot read " + path);
	const size_t n = fread(text, 1, 96, f);
	fclose(f);
	for (size_t i = 0; n == 96 && i < 48; i++) {
		unsigned v;
		if (sscanf(text + 2 * i, "%2x", &v) != 1)
			break;
		(i < 16 ? r.nonce[i] : r.mac[i - 16]) = uint8_t(v);
		if (i == 47)
			return r;
	}
	return mdr::Error(-EINVAL, path + " does not hold 96 hex digits");
}

// How a host proves itself on each connection: the options of the top.
struct HostProof {
	std::vector<uint8_t> key;
	bool forge = false;
	bool skip = false;
	std::string record, replay;

	bool wanted() const { return !key.empty() || !replay.empty(); }

	// Prints "auth: ..."; false when the connection is not to be used.
	bool run(mdr::RdmaClient &cl) const
	{
		if (skip || !wanted())
			return true;
		mdr::Result<wire::HostAuthReq> req = mdr::Error(-EINVAL, "");
		if (!replay.empty()) {
			req = read_recorded(replay);
			if (req.ok()) {
				auto r = cl.call(req.value());
				if (!r.ok())
					req = mdr::Error(r.error(), "authentication: " + r.message());
			}
		} else if (forge) {
			wire::HostAuthReq forged{.nonce = mdr::random_nonce().value()};
			forged.mac = mdr::host_mac(key, mdr::AuthLabel::host,
						   cl.host_transcript(forged.nonce));
			forged.mac[0] ^= 1;
			auto r = cl.call(forged);
			req = r.ok() ? mdr::Result<wire::HostAuthReq>(forged)
				     : mdr::Error(r.error(), "authentication: " + r.message());
		} else {
			req = cl.authenticate_host(key);
		}
		if (!req.ok()) {
			printf("auth: error: %s (%s)\n", req.message().c_str(),
			       mdr::errno_name(-req.error()).c_str());
			return false;
		}
		if (!record.empty()) {
			FILE *f = fopen(record.c_str(), "we");
			if (!f || fprintf(f, "%s%s\n", to_hex(req.value().nonce).c_str(),
					  to_hex(req.value().mac).c_str()) < 0) {
				printf("auth: error: cannot write %s\n", record.c_str());
				if (f)
					fclose(f);
				return false;
			}
			fclose(f);
		}
		printf("auth: ok\n");
		return true;
	}
};

// The allocbench step: @count ALLOCs of @volume's extents from @first,
// at most @depth outstanding. The RENEWs among them are answered from
// memory, neither timed nor counted. Prints its JSON line; false when an
// ALLOC failed (@err, @why: the first failure).
bool alloc_bench(mdr::RdmaClient &cl, uint64_t volume, uint64_t first, uint64_t count,
		 unsigned depth, int &err, std::string &why)
{
	// Leases last 1 s at least (--lease-ms): 16 ALLOCs take less, even
	// at QD1 under emulation (replication/004's stream: tens of ms each).
	constexpr uint64_t kRenewEvery = 16;
	using Clock = std::chrono::steady_clock;
	std::vector<wire::Body> reqs;
	std::vector<bool> is_alloc;

	for (uint64_t k = 0; k < count; k++) {
		reqs.push_back(wire::AllocReq{.volume_id = volume, .index = first + k});
		is_alloc.push_back(true);
		if ((k + 1) % kRenewEvery == 0 && k + 1 < count) {
			reqs.push_back(wire::RenewReq{.volume_id = volume});
			is_alloc.push_back(false);
		}
	}
	std::vector<Clock::time_point> sent(reqs.size()), answered(reqs.size());
	const mdr::RdmaClient::Watch watch{
		.depth = depth,
		.sent = [&](size_t i) { sent[i] = Clock::now(); },
		.answered = [&](size_t i) { answered[i] = Clock::now(); },
	};
	auto replies = cl.call_many(reqs, 0, &watch);

	std::vector<uint64_t> lat;
	uint64_t errors = 0;
	Clock::time_point t0 = Clock::time_point::max(), t1 = Clock::time_point::min();
	uint64_t extent = first;
	for (size_t i = 0; i < reqs.size(); i++) {
		if (is_alloc[i])
			extent = std::get<wire::AllocReq>(reqs[i]).index;
		if (!replies[i].ok() && !err) {
			err = replies[i].error();
			why = (is_alloc[i] ? "ALLOC of extent " : "RENEW after extent ") +
			      std::to_string(extent) + ": " + replies[i].message();
		}
		if (!is_alloc[i])
			continue;
		if (!replies[i].ok()) {
			errors++;
			continue;
		}
		t0 = std::min(t0, sent[i]);
		t1 = std::max(t1, answered[i]);
		lat.push_back(uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(
			answered[i] - sent[i]).count()));
	}
	const mdr::test::LatencySummary l = mdr::test::summarize_latencies(std::move(lat));
	const uint64_t elapsed_us = l.count
		? uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count())
		: 0;
	mdr::JsonWriter w;
	w.begin_object()
		.key("allocs").value(count)
		.key("ok").value(l.count)
		.key("errors").value(errors)
		.key("depth").value(std::min(depth ? depth : cl.queue_depth(), cl.queue_depth()))
		.key("elapsed_us").value(elapsed_us)
		.key("updates_per_s").value(elapsed_us ? l.count * 1000000 / elapsed_us : 0)
		.key("lat_us").begin_object()
			.key("p50").value(l.p50)
			.key("p99").value(l.p99)
			.key("max").value(l.max)
			.key("mean").value(l.mean)
		.end_object();
	if (err)
		w.key("first_error").value(why);
	w.end_object();
	printf("allocbench: %s\n", w.str().c_str());
	return err == 0;
}

void print_volume(const char *what, const wire::Volume &v)
{
	printf("%s: volume_id=%" PRIu64 " name=%s size=%" PRIu64 " extent_shift=%u tenant=%u "
	       "allocated=%" PRIu64 " open_count=%u\n",
	       what, v.volume_id, v.name.c_str(), v.size, v.extent_shift, v.tenant,
	       v.allocated, v.open_count);
}

} // namespace

int main(int argc, char **argv)
{
	mdr::ClientOptions opts;
	std::string key_file;
	HostProof proof;
	bool version_given = false;
	bool keep_going = false;
	bool timing = false;
	uint64_t retry_ms = 0;
	std::string follow_list;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		std::string_view a = argv[i];
		uint64_t v;

		if (a == "--keep-going") {
			keep_going = true;
			continue;
		}
		if (a == "--time") {
			timing = true;
			continue;
		}
		if (a == "--no-ack") {
			opts.ack_pushes = false;
			continue;
		}
		if (a == "--forge-mac" || a == "--skip-auth") {
			(a == "--forge-mac" ? proof.forge : proof.skip) = true;
			continue;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "usage: see the top of node_client.cc\n");
			return 2;
		}
		std::string val = argv[++i];
		if (mdr::test::connect_option(a, val, opts, key_file))
			continue;
		if (a == "--tenant" && parse_u64(val, v))
			opts.tenant = uint32_t(v);
		else if (a == "--retry" && parse_u64(val, v))
			retry_ms = v;
		else if (a == "--follow")
			follow_list = val;
		else if (a == "--host-id" && parse_u64(val, v))
			opts.host_id = v;
		else if (a == "--wire-version" && parse_u64(val, v) &&
			 v >= MDR_WIRE_VERSION_MIN && v <= MDR_WIRE_VERSION) {
			opts.version_max = uint16_t(v);
			version_given = true;
		} else if (a == "--key-file") {
			auto k = mdr::read_key_file(val, MDR_HOST_KEY_MIN, MDR_HOST_KEY_MAX);
			if (!k.ok()) {
				fprintf(stderr, "%s\n", k.message().c_str());
				return 2;
			}
			proof.key = std::move(k).value();
		} else if (a == "--record") {
			proof.record = val;
		} else if (a == "--replay") {
			proof.replay = val;
		} else {
			fprintf(stderr, "bad option %s %s\n", argv[i - 1], val.c_str());
			return 2;
		}
	}

	if ((proof.forge || !proof.record.empty()) && proof.key.empty()) {
		fprintf(stderr, "--forge-mac and --record need --key-file\n");
		return 2;
	}
	// --follow: where the steps go when the connection is lost, or a
	// replica names another leader (a pending move for the next try).
	struct {
		mdr::test::Replicas group;
		bool lost = false;		// a new connection first
		bool reopen = false;		// then the volumes opened again
		std::optional<wire::Leader> to;	// where, when a replica said
		std::string why;
	} fol;
	if (!follow_list.empty()) {
		if (!retry_ms) {
			fprintf(stderr, "--follow needs --retry\n");
			return 2;
		}
		fol.group.nodes.push_back(opts.node);
		for (std::string &n : split(follow_list, ','))
			fol.group.nodes.push_back(std::move(n));
	}
	// A host without a key speaks version 2 at most: unauthenticated.
	if (opts.role == MDR_ROLE_HOST && !version_given)
		opts.version_max = proof.wanted() || proof.skip ? MDR_WIRE_VERSION : 2;

	std::unique_ptr<mdr::RdmaClient> c = mdr::test::connect_or_say(opts);
	if (!c)
		return 1;
	auto show_pushes = [](mdr::RdmaClient &cl) {
		cl.on_push([](uint64_t id, const wire::Invalidate &inv) {
			printf("push: id=%" PRIu64 " volume_id=%" PRIu64 " first=%" PRIu64
			       " count=%" PRIu64 " gen=%" PRIu64 " reason=%u\n",
			       id, inv.volume_id, inv.first, inv.count, inv.generation,
			       inv.reason);
			fflush(stdout);
		});
	};
	show_pushes(*c);
	printf("connect: version=%u queue_depth=%u push_credits=%u\n", c->accepted().version,
	       c->accepted().queue_depth, c->accepted().push_credits);
	// Seen at once by a script waiting for the connection (a step tried
	// again under --retry flushes nothing until it is answered).
	fflush(stdout);
	if (opts.role == MDR_ROLE_HOST && !proof.run(*c))
		return 1;
	if (!key_file.empty()) {
		if (!mdr::test::prove_admin_key(*c, key_file))
			return 1;
		printf("auth: ok\n");
		fflush(stdout);
	}

	std::map<std::string, Opened> opened;
	int failures = 0;
	// --follow: the connection the steps go on with, once the last was
	// lost or named another leader: proven, then every volume opened
	// again. False once @fail was told why (to try again, or not); the
	// connection before stays until a new one is up.
	auto rejoin = [&](const auto &fail) {
		if (fol.lost) {
			auto [node, port] = fol.group.next(std::exchange(fol.to, std::nullopt),
							   opts.port);
			mdr::ClientOptions o = opts;
			o.node = node;
			o.port = port;
			auto n = mdr::RdmaClient::connect(o);
			if (!n.ok()) {
				// Refused (a replica that stopped) or silent: the
				// next one on the next try, a little later.
				std::this_thread::sleep_for(std::chrono::milliseconds(100));
				fail("following to " + node + ": " + n.message(), -ECONNRESET);
				return false;
			}
			c = std::move(n).value();
			show_pushes(*c);
			if (opts.role == MDR_ROLE_HOST && !proof.run(*c)) {
				fail("following to " + node + ": its proof failed", -EPERM);
				return false;
			}
			if (!key_file.empty() && !mdr::test::prove_admin_key(*c, key_file)) {
				fail("following to " + node + ": its admin key was refused",
				     -EPERM);
				return false;
			}
			printf("follow: %s version=%u (%s)\n", node.c_str(), c->accepted().version,
			       fol.why.c_str());
			fflush(stdout);
			fol.lost = false;
			fol.reopen = true;
		}
		// A replica that leads but does not serve yet answers AGAIN,
		// one that does not lead names the leader: tried again either way.
		for (auto &[name, v] : opened) {
			auto r = c->call(wire::OpenReq{.volume_id = v.rep.volume_id});
			if (!r.ok()) {
				fail("opening " + name + " again: " + r.message(), r.error());
				return false;
			}
			v.rep = std::get<wire::OpenRep>(r.value().body);
		}
		fol.reopen = false;
		return true;
	};
	// --retry: the step being tried again, since when, how often.
	int retrying = -1;
	auto retry_since = std::chrono::steady_clock::now();
	uint64_t tries = 0;
	for (; i < argc && (keep_going || failures == 0); i++) {
		auto w = split(argv[i]);
		const std::string &op = w[0];
		if (retrying != i) {
			retrying = i;
			retry_since = std::chrono::steady_clock::now();
			tries = 0;
		}
		tries++;
		bool again = false;
		auto fail = [&](const std::string &msg, int err) {
			const bool in_time = retry_ms &&
					     std::chrono::steady_clock::now() - retry_since <
						     std::chrono::milliseconds(retry_ms);
			// --follow: a connection lost or silent, or a replica that
			// named another leader: a new connection on the next try.
			std::optional<wire::Leader> to = c->take_redirect();
			if (in_time && !fol.group.nodes.empty() &&
			    (err == -ECONNRESET || err == -ETIMEDOUT || (to && to->known()))) {
				fol.lost = true;
				fol.reopen = false;
				fol.to = to && to->known() ? to : std::nullopt;
				fol.why = msg;
				again = true;
				return;
			}
			if (err == -EAGAIN && in_time) {
				again = true;
				return;
			}
			printf("%s: error: %s (%s)\n", op.c_str(), msg.c_str(),
			       mdr::errno_name(-err).c_str());
			failures++;
		};
		// The step has n - 1 arguments, those at nums being numbers.
		auto need = [&](size_t n, std::initializer_list<std::pair<size_t, uint64_t *>> nums = {}) {
			if (w.size() != n) {
				fail("wants " + std::to_string(n - 1) + " arguments", -EINVAL);
				return false;
			}
			for (auto [k, out] : nums)
				if (!parse_u64(w[k], *out)) {
					fail("'" + w[k] + "' is not a number", -EINVAL);
					return false;
				}
			return true;
		};
		auto vol = [&]() -> Opened * {
			auto it = opened.find(w[1]);
			if (it == opened.end()) {
				fail(w[1] + " was not opened", -EINVAL);
				return nullptr;
			}
			return &it->second;
		};
		uint64_t a = 0, b = 0, n = 0;
		const auto t0 = std::chrono::steady_clock::now();
		const bool ready = !(fol.lost || fol.reopen) || rejoin(fail);
		mdr::RdmaClient &cl = *c;

		if (!ready) {
			// rejoin() told fail() why
		} else if (op == "ping") {
			if (!need(1))
				continue;
			auto r = cl.call(wire::PingReq{});
			r.ok() ? (void)printf("ping: ok\n") : fail(r.message(), r.error());
		} else if (op == "open") {
			if (!need(2))
				continue;
			auto r = cl.call(wire::OpenReq{.flags = MDR_OPEN_F_BY_NAME, .name = w[1]});
			if (!r.ok()) {
				fail(r.message(), r.error());
			} else {
				const auto &o = std::get<wire::OpenRep>(r.value().body);
				opened[w[1]] = {o};
				printf("open: volume_id=%" PRIu64 " size=%" PRIu64 " entries=%" PRIu64
				       " extent_shift=%u addr=0x%" PRIx64 " rkey=0x%x lease_ms=%u\n",
				       o.volume_id, o.size, o.table_len / sizeof(mdr_wire_entry),
				       o.extent_shift, o.table_addr, o.table_rkey, o.lease_ms);
			}
		} else if (op == "alloc") {
			if (!need(3, {{2, &a}}))
				continue;
			if (Opened *v = vol()) {
				auto r = cl.call(wire::AllocReq{.volume_id = v->rep.volume_id, .index = a});
				if (r.ok()) {
					print_entry("alloc", a, std::get<wire::AllocRep>(r.value().body).entry);
				} else if (r.error() == -ESTALE && retry_ms) {
					// The lease lapsed while the step was tried again (a
					// new leader holds ALLOCs back longer than a lease):
					// opened again, as a host does, then tried again.
					auto o = cl.call(wire::OpenReq{.volume_id = v->rep.volume_id});
					if (o.ok())
						v->rep = std::get<wire::OpenRep>(o.value().body);
					fail(o.ok() ? r.message() : o.message(),
					     o.ok() ? -EAGAIN : o.error());
				} else {
					fail(r.message(), r.error());
				}
			}
		} else if (op == "allocs") {
			if (!need(4, {{2, &a}, {3, &n}}))
				continue;
			if (Opened *v = vol()) {
				for (uint64_t k = a; k < a + n; k++) {
					auto r = cl.call(wire::AllocReq{.volume_id = v->rep.volume_id,
									.index = k});
					if (!r.ok()) {
						fail(r.message(), r.error());
						break;
					}
					print_entry("alloc", k,
						    std::get<wire::AllocRep>(r.value().body).entry);
					fflush(stdout);
				}
			}
		} else if (op == "allocbench") {
			if (!need(5, {{2, &a}, {3, &n}, {4, &b}}))
				continue;
			if (Opened *v = vol()) {
				int err = 0;
				std::string why;
				if (!alloc_bench(cl, v->rep.volume_id, a, n, unsigned(b), err, why))
					fail(why, err);
			}
		} else if (op == "clock") {
			if (!need(1))
				continue;
			timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			printf("clock: realtime_us=%lld\n",
			       (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
		} else if (op == "read") {
			if (!need(4, {{2, &a}, {3, &b}}))
				continue;
			Opened *v = vol();
			if (v && b > 0 && (a + b) * 32 <= v->rep.table_len) {
				auto r = cl.read(v->rep.table_addr + a * 32, v->rep.table_rkey,
						 uint32_t(b * 32));
				if (!r.ok()) {
					fail(r.message(), r.error());
				} else {
					for (uint64_t k = 0; k < b; k++) {
						mdr_wire_entry e;
						std::memcpy(&e, r.value().data() + k * 32, 32);
						auto chk = wire::verify_entry(e, v->rep.volume_id, a + k);
						if (chk != wire::EntryCheck::ok)
							fail("entry " + std::to_string(a + k) + ": " +
								     wire::entry_check_name(chk), -EBADMSG);
						else
							print_entry("read", a + k, wire::decode_entry(e));
					}
				}
			} else if (v) {
				fail("range beyond the table", -EINVAL);
			}
		} else if (op == "readat") {
			if (!need(3, {{1, &a}, {2, &b}}))
				continue;
			auto r = cl.read(a, uint32_t(b), 32);
			r.ok() ? (void)printf("readat: ok\n") : fail(r.message(), r.error());
		} else if (op == "idle") {
			if (!(w.size() == 3 ? need(3, {{1, &a}, {2, &b}}) : need(2, {{1, &a}})))
				continue;
			// b: how often to renew every lease (0: never).
			const auto end = t0 + std::chrono::milliseconds(a);
			mdr::Status st;
			for (;;) {
				auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
					end - std::chrono::steady_clock::now()).count();
				if (left <= 0)
					break;
				st = cl.serve_pushes(int(b ? std::min<int64_t>(left, b) : left));
				if (!st.ok() || !b)
					break;
				for (const auto &[name, o] : opened) {
					auto r = cl.call(wire::RenewReq{.volume_id = o.rep.volume_id});
					if (!r.ok()) {
						st = mdr::Error(r.error(), "renewal of " + name +
									   " refused: " + r.message());
						break;
					}
				}
				if (!st.ok())
					break;
			}
			st.ok() ? (void)printf("idle: invalidations=%" PRIu64 "\n", cl.invalidations())
				: fail(st.message(), st.error());
		} else if (op == "renewall") {
			if (!need(1))
				continue;
			auto r = cl.call(wire::RenewReq{.volume_id = 0});
			r.ok() ? (void)printf("renewall: ok\n") : fail(r.message(), r.error());
		} else if (op == "churn") {
			if (!need(2, {{1, &n}}))
				continue;
			uint64_t k = 0;
			for (; k < n; k++) {
				auto cc = mdr::RdmaClient::connect(opts);
				if (!cc.ok()) {
					fail("connection " + std::to_string(k) + ": " + cc.message(),
					     cc.error());
					break;
				}
				if (opts.role == MDR_ROLE_HOST && !proof.run(*cc.value())) {
					fail("connection " + std::to_string(k) + ": no proof", -EPERM);
					break;
				}
				if (auto r = cc.value()->call(wire::PingReq{}); !r.ok()) {
					fail("ping on connection " + std::to_string(k) + ": " +
						     r.message(), r.error());
					break;
				}
			}
			if (k == n)
				printf("churn: connections=%" PRIu64 " ok\n", n);
		} else if (op == "renew" || op == "close") {
			if (!need(2))
				continue;
			if (Opened *v = vol()) {
				auto r = op == "renew"
						 ? cl.call(wire::RenewReq{.volume_id = v->rep.volume_id})
						 : cl.call(wire::CloseReq{.volume_id = v->rep.volume_id});
				r.ok() ? (void)printf("%s: ok\n", op.c_str()) : fail(r.message(), r.error());
			}
		} else if (op == "create") {
			if (!(w.size() == 5 ? need(5, {{2, &a}, {3, &b}, {4, &n}})
					    : need(4, {{2, &a}, {3, &b}})))
				continue;
			auto r = cl.call(wire::VolCreateReq{.size = a, .extent_shift = uint32_t(n),
							    .tenant = uint32_t(b), .name = w[1]});
			if (r.ok())
				print_volume("create", std::get<wire::VolCreateRep>(r.value().body).vol);
			else
				fail(r.message(), r.error());
		} else if (op == "resize") {
			if (!need(3, {{2, &a}}))
				continue;
			auto r = cl.call(wire::VolResizeReq{.size = a, .name = w[1]});
			if (r.ok())
				print_volume("resize", std::get<wire::VolResizeRep>(r.value().body).vol);
			else
				fail(r.message(), r.error());
		} else if (op == "delete") {
			if (!need(2))
				continue;
			auto r = cl.call(wire::VolDeleteReq{.name = w[1]});
			r.ok() ? (void)printf("delete: ok\n") : fail(r.message(), r.error());
		} else if (op == "info") {
			if (!need(2))
				continue;
			auto r = cl.call(wire::VolInfoReq{.name = w[1]});
			if (r.ok()) {
				const auto &rep = std::get<wire::VolInfoRep>(r.value().body);
				print_volume("info", rep.vol);
				for (const auto &d : rep.devs)
					printf("info: dev=%u extents=%" PRIu64 "\n", d.dev_id, d.extents);
			} else {
				fail(r.message(), r.error());
			}
		} else if (op == "list") {
			if (!need(1))
				continue;
			uint64_t cursor = 0;
			do {
				auto r = cl.call(wire::VolListReq{.cursor = cursor});
				if (!r.ok()) {
					fail(r.message(), r.error());
					break;
				}
				const auto &rep = std::get<wire::VolListRep>(r.value().body);
				for (const auto &v : rep.vols)
					print_volume("list", v);
				cursor = rep.next;
			} while (cursor);
		} else if (op == "devs") {
			if (!need(1))
				continue;
			auto r = cl.call(wire::DevListReq{});
			if (r.ok())
				for (const auto &d : std::get<wire::DevListRep>(r.value().body).devs)
					printf("devs: dev=%u size=%" PRIu64 " used=%" PRIu64 " serial=%s\n",
					       d.dev_id, d.size, d.used, d.serial.c_str());
			else
				fail(r.message(), r.error());
		} else if (op == "stats") {
			if (!need(1))
				continue;
			auto r = cl.call(wire::NodeStatsReq{});
			if (r.ok()) {
				const auto &s = std::get<wire::NodeStatsRep>(r.value().body);
				printf("stats: volumes=%" PRIu64 " requests=%" PRIu64 " errors=%" PRIu64
				       " bad_messages=%" PRIu64 " journal_records=%" PRIu64
				       " invalidations=%" PRIu64 " connections=%" PRIu64
				       " lease_expiries=%" PRIu64 "\n",
				       s.volumes, s.requests, s.errors, s.bad_messages,
				       s.journal_records, s.invalidations, s.connections,
				       s.lease_expiries);
			} else {
				fail(r.message(), r.error());
			}
		} else {
			fail("unknown step or bad number in '" + std::string(argv[i]) + "'", -EINVAL);
		}
		if (again) {
			// Not printed, not counted: the same step in 5 ms.
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
			i--;
			continue;
		}
		if (tries > 1)
			printf("retry: %s tries=%" PRIu64 "\n", op.c_str(), tries);
		if (timing)
			printf("time: %s ms=%lld\n", op.c_str(),
			       (long long)std::chrono::duration_cast<std::chrono::milliseconds>(
				       std::chrono::steady_clock::now() - t0).count());
		fflush(stdout);
	}
	printf("invalidations: %" PRIu64 "\n", c->invalidations());
	return failures ? 1 : 0;
}
