// SPDX-License-Identifier: GPL-2.0
//
// test_node_replicated.cc - mdnode's change path on a replica of a group
// (core.h, ReplicatedLog), through the Net seam with a fake transport and a
// log that commits by hand: a change is journaled and shipped at the log's
// next index, answered (and seen in the store) only once the commit index
// covers it, however long its local journal has had it durable; a replica
// that stops leading answers what waits with AGAIN and leaves the store as
// it was; a replica that does not lead refuses leases and changes with
// AGAIN, journals nothing, and still answers reads; a replica that starts
// to lead waits out the leases of the leaders before it; stopping to serve
// cuts the hosts and keeps the admins; changes of the replica set are the
// log's to begin, at the leader only.
#include <cerrno>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lib/wire/wire.h"
#include "mdnode/core.h"
#include "mdnode/repl_answer.h"

#include "tests/test_node.h"

#include "tests/common/cmocka_cxx.h"

namespace wire = mdr::wire;
using mdnode::ConnId;

namespace {

using namespace mdr::test;

// The group's log as the node sees it: records journaled and shipped in
// order, the local journal's durable index, and a commit index moved by
// hand.
class FakeLog : public mdnode::ReplicatedLog {
public:
	bool accepting() const override { return accept; }
	mdr::Result<uint64_t> ship(uint16_t type, std::span<const std::byte> payload,
				   std::function<void(int err)> committed) override
	{
		const uint64_t index = next;

		if (auto st = journal->append(type, payload, [this, index](const mdr::Status &s) {
			    assert_true(s.ok());
			    assert_int_equal(index, durable + 1);
			    durable = index;
		    });
		    !st.ok())
			return mdr::Error(st.error(), st.message());
		next++;
		types.push_back(type);
		if (auto st = answers.hold(index, std::move(committed)); !st.ok())
			return mdr::Error(st.error(), st.message());
		return index;
	}
	std::optional<std::vector<uint8_t>> checkpoint() const override
	{
		return std::nullopt;
	}
	std::optional<wire::Leader> redirect() const override { return leader; }
	wire::GroupStatusRep group_status() const override { return status; }
	mdr::Status change_membership(const mdnode::MembershipChange &c) override
	{
		changes.push_back(c);
		if (change_error)
			return mdr::Error(change_error, "refused here");
		return {};
	}

	mdnode::Journal *journal = nullptr;
	bool accept = true;
	std::optional<wire::Leader> leader;	// redirect()'s
	wire::GroupStatusRep status;		// group_status()'s
	std::vector<mdnode::MembershipChange> changes;	// change_membership()'s calls
	int change_error = 0;			// what it returns, -errno
	uint64_t next = 1;
	uint64_t durable = 0;
	std::vector<uint16_t> types;
	mdnode::repl::AnswerQueue answers;
};

// The create of a volume of 4 MiB of tenant 1.
wire::VolCreateReq volume_of_4m(const char *name)
{
	return {.size = 4 * MiB, .extent_shift = kShift, .tenant = 1, .name = name};
}

struct Replica : Rig {
	Replica()
	{
		log.journal = journal.get();
		node->replicate(log);
	}

	void settle() override
	{
		flush();
		log.answers.release(log.next - 1);
	}

	// One request, committed: its status.
	uint16_t change(ConnId conn, uint64_t req_id, const wire::Body &body)
	{
		send(conn, req_id, body);
		settle();
		return status_of(one(conn));
	}

	FakeLog log;
};

void test_change_answered_at_commit(void **)
{
	Replica r;
	const ConnId adm = r.admin();
	const uint64_t records = r.journal->stats().records;

	r.send(adm, 1, wire::VolCreateReq{.size = 4 * MiB, .extent_shift = kShift, .tenant = 1,
					  .name = "v"});
	r.send(adm, 2, wire::VolCreateReq{.size = 4 * MiB, .extent_shift = kShift, .tenant = 1,
					  .name = "w"});
	assert_int_equal(r.log.next, 3);
	assert_int_equal(r.log.types.size(), 2);
	assert_int_equal(r.log.types[0], mdnode::kVolumeCreate);
	// Durable here: told to the log, and still neither answered nor seen.
	r.flush();
	assert_int_equal(r.journal->stats().records, records + 2);
	assert_int_equal(r.log.durable, 2);
	assert_true(r.quiet(adm));
	assert_null(r.store->volume("v"));
	// The commit index covers the first: it alone takes effect.
	r.log.answers.release(1);
	wire::Msg m = r.one(adm);
	assert_int_equal(m.hdr.req_id, 1);
	assert_int_equal(status_of(m), MDR_ST_OK);
	assert_non_null(r.store->volume("v"));
	assert_null(r.store->volume("w"));
	r.log.answers.release(2);
	assert_int_equal(status_of(r.one(adm)), MDR_ST_OK);
	assert_non_null(r.store->volume("w"));

	// An ALLOC the same way: its host hears of it only at the commit.
	const uint64_t vol = r.store->volume("v")->id;
	const ConnId h = r.host(1, 0xa);
	r.open(h, vol);	// its HOLDER_ADD at index 3
	assert_int_equal(r.log.types[2], mdnode::kHolderAdd);
	r.send(h, 3, wire::AllocReq{.volume_id = vol, .index = 0});
	r.flush();
	assert_true(r.quiet(h));
	assert_int_equal(r.store->volume(vol)->allocated, 0);
	r.log.answers.release(4);
	expect_alloc(r, r.one(h), 3, vol, 0);
}

// Stopping to lead answers every change that waits with AGAIN (the client
// asks again), and none of them took effect here.
void test_abandoned_changes(void **)
{
	Replica r;
	const ConnId adm = r.admin();

	r.send(adm, 1, wire::VolCreateReq{.size = 4 * MiB, .extent_shift = kShift, .tenant = 1,
					  .name = "v"});
	r.flush();
	r.log.accept = false;
	r.log.answers.abandon(-EAGAIN);
	wire::Msg m = r.one(adm);
	assert_int_equal(status_of(m), MDR_ST_AGAIN);
	assert_int_equal(std::get<wire::ErrorRep>(m.body).opcode, MDR_OP_VOL_CREATE);
	assert_null(r.store->volume("v"));
	assert_int_equal(r.store->counts().in_flight, 0);
}

// A replica that does not lead: every lease and change refused with AGAIN
// before the journal sees it; reads answered.
void test_follower_refuses(void **)
{
	Replica r;
	const ConnId adm = r.admin();
	r.send(adm, 1, wire::VolCreateReq{.size = 4 * MiB, .extent_shift = kShift, .tenant = 1,
					  .name = "v"});
	r.flush();
	r.log.answers.release(1);
	assert_int_equal(status_of(r.one(adm)), MDR_ST_OK);
	const uint64_t vol = r.store->volume("v")->id;
	const ConnId h = r.host(1, 0xa);
	r.open(h, vol);

	r.log.accept = false;
	const uint64_t records = r.journal->stats().records;
	struct {
		ConnId conn;
		wire::Body body;
		uint16_t opcode;
	} refused[] = {
		{h, wire::AllocReq{.volume_id = vol, .index = 0}, MDR_OP_ALLOC},
		{h, wire::OpenReq{.volume_id = vol}, MDR_OP_OPEN},
		{h, wire::RenewReq{}, MDR_OP_RENEW},
		{adm, wire::VolCreateReq{.size = MiB, .extent_shift = kShift, .tenant = 1,
					 .name = "w"}, MDR_OP_VOL_CREATE},
		{adm, wire::VolDeleteReq{.name = "v"}, MDR_OP_VOL_DELETE},
	};
	uint64_t id = 10;
	for (const auto &c : refused) {
		r.send(c.conn, id, c.body);
		wire::Msg m = r.one(c.conn);
		assert_int_equal(m.hdr.req_id, id);
		assert_int_equal(status_of(m), MDR_ST_AGAIN);
		assert_int_equal(std::get<wire::ErrorRep>(m.body).opcode, c.opcode);
		id++;
	}
	r.flush();
	assert_int_equal(r.journal->stats().records, records);
	assert_int_equal(r.log.next, 3);	// the create, the open's HOLDER_ADD
	assert_non_null(r.store->volume("v"));
	assert_null(r.store->volume("w"));
	// Reads go on.
	assert_int_equal(r.info(adm, "v").vol.volume_id, vol);
	assert_int_equal(r.call(adm, 20, wire::VolListReq{}), MDR_ST_OK);

	// Leading again: changes are taken.
	r.log.accept = true;
	r.send(adm, 21, wire::VolCreateReq{.size = MiB, .extent_shift = kShift, .tenant = 1,
					   .name = "w"});
	r.flush();
	r.log.answers.release(3);
	assert_int_equal(status_of(r.one(adm)), MDR_ST_OK);
	assert_non_null(r.store->volume("w"));
}

// A replica that starts to lead waits out, as a start does, the leases the
// leaders before it granted, by the bounds it inherited (wider than its
// own): no ALLOC in a volume from before until the lease part is over
// (AGAIN), no delete of one until their IO can land no more (BUSY). A
// volume created since is held back by neither.
void test_new_leader_waits_out_old_leases(void **)
{
	Replica r;
	const ConnId adm = r.admin();
	const wire::VolCreateReq v = volume_of_4m("v");
	assert_int_equal(r.change(adm, 1, v), MDR_ST_OK);
	assert_int_equal(r.change(adm, 2, volume_of_4m("u")), MDR_ST_OK);
	const uint64_t vol = r.store->volume("v")->id;
	// Long after the process's start: only the windows begun below count.
	r.now += 3600 * 1000;

	const mdnode::LeaseBounds inherited{uint32_t(kHeldMs) + 2000, kIoHoldMs + 3000};
	r.node->begin_leading(inherited);
	const ConnId h = r.host(1, 0xa);
	r.open(h, vol);
	assert_int_equal(r.change(h, 3, wire::AllocReq{.volume_id = vol, .index = 0}),
			 MDR_ST_AGAIN);
	wire::VolCreateReq w = v;
	w.name = "w";
	assert_int_equal(r.change(adm, 4, w), MDR_ST_OK);
	const uint64_t fresh = r.store->volume("w")->id;
	r.open(h, fresh);
	assert_int_equal(r.change(h, 5, wire::AllocReq{.volume_id = fresh, .index = 0}),
			 MDR_ST_OK);

	// Past its own lease bound, not the inherited one (the host's lease
	// taken again, as it ran out meanwhile).
	r.now += kHeldMs + 1;
	r.open(h, vol);
	assert_int_equal(r.change(h, 6, wire::AllocReq{.volume_id = vol, .index = 0}),
			 MDR_ST_AGAIN);
	r.now += 2000;
	r.open(h, vol);
	assert_int_equal(r.change(h, 7, wire::AllocReq{.volume_id = vol, .index = 0}),
			 MDR_ST_OK);
	// The IO part: a delete of a volume from before waits for it too.
	assert_int_equal(r.change(adm, 8, wire::VolDeleteReq{.name = "u"}), MDR_ST_BUSY);
	r.now += kIoHoldMs + 3000;
	assert_int_equal(r.change(adm, 9, wire::VolDeleteReq{.name = "u"}), MDR_ST_OK);
	assert_null(r.store->volume("u"));
}

// A new leader knows from the log which hosts may hold leases on a volume
// (HOLDER_ADD before each first OPEN, HOLDER_DROP at a CLOSE): once every
// one of them has opened it here on a kernel that then drops its cache
// (version 7), an ALLOC in it goes ahead within the inherited lease. A
// holder on an older kernel, or one not back yet, keeps it waiting.
void test_new_leader_allocates_once_holders_reopened(void **)
{
	Replica r;
	const ConnId adm = r.admin();
	const std::string key = "0123456789abcdef0123456789abcdef";
	auto host = [&r, adm, &key](uint64_t id, uint16_t version) {
		assert_int_equal(r.add_host(adm, id, 1, key), MDR_ST_OK);
		return r.proven_host(1, id, key, version);
	};
	assert_int_equal(r.change(adm, 1, volume_of_4m("v")), MDR_ST_OK);
	assert_int_equal(r.change(adm, 2, volume_of_4m("u")), MDR_ST_OK);
	const uint64_t vol = r.store->volume("v")->id;
	const uint64_t old_vol = r.store->volume("u")->id;
	assert_true(r.store->volume(vol)->holders_known);

	const ConnId a = host(0xa, wire::kEpochVersion);
	const ConnId b = host(0xb, wire::kEpochVersion);
	const ConnId c = host(0xc, wire::kEpochVersion - 1);
	r.open(a, vol);
	r.open(b, vol);
	r.open(a, old_vol);
	r.open(c, old_vol);
	assert_true(r.store->holder(vol, 0xa) && r.store->holder(vol, 0xb));
	// An OPEN again of a holder journals nothing.
	const uint64_t shipped = r.log.next;
	r.open(a, vol);
	assert_int_equal(r.log.next, shipped);
	// b closes: dropped, once the log has it.
	assert_int_equal(r.call(b, 5, wire::CloseReq{.volume_id = vol}), MDR_ST_OK);
	assert_false(r.store->holder(vol, 0xb));
	r.settle();
	assert_int_equal(r.log.types.back(), mdnode::kHolderDrop);
	assert_false(r.store->volume(vol)->holders.contains(0xb));

	// Leading again, long after, at the bounds it grants by itself: the
	// leases of before are waited out...
	r.now += 3600 * 1000;
	r.node->begin_leading({uint32_t(kHeldMs), kIoHoldMs});
	r.open(a, vol);
	r.open(a, old_vol);
	// ...but for a volume whose holders all came back: a alone holds v.
	assert_int_equal(r.change(a, 6, wire::AllocReq{.volume_id = vol, .index = 0}), MDR_ST_OK);
	// u: c's kernel keeps what it cached, whether it came back or not.
	assert_int_equal(r.change(a, 7, wire::AllocReq{.volume_id = old_vol, .index = 0}),
			 MDR_ST_AGAIN);
	r.open(c, old_vol);
	assert_int_equal(r.change(a, 8, wire::AllocReq{.volume_id = old_vol, .index = 0}),
			 MDR_ST_AGAIN);
	// b opens v (again, or here first): an ALLOC of a in v goes ahead,
	// and b hears of it before a does.
	auto b_back = [&](uint64_t req_id, uint64_t index) {
		r.open(b, vol);
		r.send(a, req_id, wire::AllocReq{.volume_id = vol, .index = index});
		r.settle();
		r.ack(b, r.one(b));
		assert_int_equal(status_of(r.one(a)), MDR_ST_OK);
	};
	// A host new to v since: a holder now, and back already.
	b_back(9, 1);
	// An extent mapped already (by the leader before, whose push may
	// never have gone): b hears of it again before a's answer, since its
	// reopen may not be through on its side.
	b_back(10, 1);

	// Taken over again with leases of before longer than its own: those
	// may outlast b's here, whoever came back; and b's lease lapsing here
	// meanwhile does not drop it.
	r.now += 3600 * 1000;
	r.node->begin_leading({uint32_t(kHeldMs) + 2000, kIoHoldMs});
	r.open(a, vol);
	r.open(b, vol);
	assert_int_equal(r.change(a, 11, wire::AllocReq{.volume_id = vol, .index = 3}),
			 MDR_ST_AGAIN);
	r.now += kHeldMs + 1;
	r.node->tick();
	r.settle();
	assert_true(r.store->holder(vol, 0xb));

	// Taken over again: b not back yet keeps v waiting.
	r.now += 3600 * 1000;
	r.node->begin_leading({uint32_t(kHeldMs), kIoHoldMs});
	r.open(a, vol);
	assert_int_equal(r.change(a, 12, wire::AllocReq{.volume_id = vol, .index = 2}),
			 MDR_ST_AGAIN);
	b_back(13, 2);
}

// A replica that stops serving cuts its hosts and keeps its admins.
void test_stop_serving_hosts(void **)
{
	Replica r;
	const ConnId adm = r.admin();
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(2, 0xb);

	r.node->stop_serving_hosts();
	assert_true(r.net.cut(a));
	assert_true(r.net.cut(b));
	assert_false(r.net.cut(adm));
}

} // namespace

// A replica that does not lead names the leader to clients of version 5
// (the leader as it knows it, or none), and answers AGAIN to older ones
// and while it is about to lead itself (redirect() none).
static void test_follower_names_the_leader(void **)
{
	Replica r;
	const ConnId adm = r.admin();
	const ConnId old_adm = r.admin(true, wire::kGroupVersion - 1);
	const ConnId h = r.host(1, 0xa);
	const wire::Leader at{.epoch = 9, .replica = 2, .port = 4791,
			      .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 12}};
	const wire::Body create = wire::VolCreateReq{.size = MiB, .extent_shift = kShift,
						     .tenant = 1, .name = "w"};
	auto leader_of = [](const wire::Msg &m) {
		const auto &e = std::get<wire::ErrorRep>(m.body);

		assert_int_equal(e.status, MDR_ST_NOT_LEADER);
		assert_true(e.leader.has_value());
		return *e.leader;
	};

	r.log.accept = false;
	r.log.leader = at;
	r.send(adm, 1, create);
	assert_true(leader_of(r.one(adm)) == at);
	// This rig's hosts speak a version before 5 (unproven): AGAIN.
	assert_true(r.host_version < wire::kGroupVersion);
	r.send(h, 2, wire::OpenReq{.volume_id = 1});
	wire::Msg m = r.one(h);
	assert_int_equal(std::get<wire::ErrorRep>(m.body).opcode, MDR_OP_OPEN);
	assert_int_equal(status_of(m), MDR_ST_AGAIN);
	// Before version 5: AGAIN, which that client knows.
	assert_int_equal(r.call(old_adm, 3, create), MDR_ST_AGAIN);
	// No leader known: the reply says so.
	r.log.leader = wire::Leader{};
	r.send(adm, 4, create);
	assert_false(leader_of(r.one(adm)).known());
	// About to lead: AGAIN, here.
	r.log.leader.reset();
	assert_int_equal(r.call(adm, 5, create), MDR_ST_AGAIN);
	// Reads are answered, leader or not.
	assert_int_equal(r.call(adm, 6, wire::VolListReq{}), MDR_ST_OK);
	// A name it does not know may be one it is behind on: a client that
	// follows is sent to the leader it knows; without one (about to lead,
	// or none known), and to an older client, its store answers.
	assert_int_equal(r.call(adm, 7, wire::VolInfoReq{"w"}), MDR_ST_NOENT);
	r.log.leader = at;
	r.send(adm, 8, wire::VolInfoReq{"w"});
	m = r.one(adm);
	assert_int_equal(std::get<wire::ErrorRep>(m.body).opcode, MDR_OP_VOL_INFO);
	assert_true(leader_of(m) == at);
	assert_int_equal(r.call(old_adm, 9, wire::VolInfoReq{"w"}), MDR_ST_NOENT);
	r.log.leader = wire::Leader{};
	assert_int_equal(r.call(adm, 10, wire::VolInfoReq{"w"}), MDR_ST_NOENT);
	r.flush();
	assert_int_equal(r.log.next, 1);
	assert_null(r.store->volume("w"));
}

// GROUP_STATUS: what the replica's log says of its group, from leader and
// follower alike; a node of its own says it has none.
static void test_group_status(void **)
{
	Replica r;
	const ConnId adm = r.admin();

	r.log.accept = false;
	r.log.status = {.group = 7, .epoch = 3, .last_index = 4, .commit_index = 4, .self = 2,
			.leader = 1, .role = MDR_REPLICA_FOLLOWER,
			.replicas = {{.id = 1, .port = 4800, .family = MDR_FAMILY_IPV4,
				      .addr = {192, 0, 2, 11}},
				     {.durable = 4, .id = 2, .state = MDR_PEER_SELF, .port = 4800,
				      .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 12},
				      .host_port = 4791, .host_family = MDR_FAMILY_IPV4,
				      .host_addr = {192, 0, 2, 12}}},
			.extended = true};
	r.send(adm, 1, wire::GroupStatusReq{});
	assert_true(std::get<wire::GroupStatusRep>(r.one(adm).body) == r.log.status);
	// A replica's membership from version 6 on; a voter's (zero) before.
	r.log.status.replicas[0].membership = MDR_MEMBER_LEAVING;
	r.send(adm, 2, wire::GroupStatusReq{});
	assert_true(std::get<wire::GroupStatusRep>(r.one(adm).body) == r.log.status);
	const ConnId old_adm = r.admin(true, wire::kMembershipVersion - 1);
	r.send(old_adm, 3, wire::GroupStatusReq{});
	wire::GroupStatusRep old = std::get<wire::GroupStatusRep>(r.one(old_adm).body);
	assert_int_equal(old.replicas[0].membership, MDR_MEMBER_VOTER);
	old.replicas[0].membership = MDR_MEMBER_LEAVING;
	// nor where the replicas serve hosts (version 7)
	assert_false(old.extended);
	assert_int_equal(old.replicas[1].host_family, MDR_FAMILY_NONE);
	old.extended = true;
	old.replicas[1].host_port = 4791;
	old.replicas[1].host_family = MDR_FAMILY_IPV4;
	old.replicas[1].host_addr = {192, 0, 2, 12};
	assert_true(old == r.log.status);

	Rig own;
	const ConnId a = own.admin();
	own.send(a, 1, wire::GroupStatusReq{});
	assert_true(std::get<wire::GroupStatusRep>(own.one(a).body) == wire::GroupStatusRep{});
	// Admins only, with the key.
	const ConnId unproven = own.admin(false);
	assert_int_equal(own.call(unproven, 2, wire::GroupStatusReq{}), MDR_ST_PERM);
}

// REPLICA_ADD and REPLICA_REMOVE: at the leader, given to the group's log
// as they came and answered once it began them, its refusals answered as
// their statuses; a replica that does not lead names the leader and asks
// the log nothing; a node of its own has no set to change; admins only,
// with the key.
static void test_replica_changes(void **)
{
	Replica r;
	const ConnId adm = r.admin();
	const wire::ReplicaAddReq add{.id = 4, .port = 4800, .family = MDR_FAMILY_IPV6,
				      .addr = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4}};

	r.send(adm, 1, add);
	wire::Msg m = r.one(adm);
	assert_int_equal(status_of(m), MDR_ST_OK);
	assert_true(std::holds_alternative<wire::ReplicaAddRep>(m.body));
	r.send(adm, 2, wire::ReplicaRemoveReq{.id = 2});
	m = r.one(adm);
	assert_int_equal(status_of(m), MDR_ST_OK);
	assert_true(std::holds_alternative<wire::ReplicaRemoveRep>(m.body));
	assert_int_equal(r.log.changes.size(), 2);
	assert_true(r.log.changes[0].add);
	assert_int_equal(r.log.changes[0].id, 4);
	assert_string_equal(r.log.changes[0].address.c_str(), "fd00::4");
	assert_int_equal(r.log.changes[0].port, 4800);
	assert_false(r.log.changes[1].add);
	assert_int_equal(r.log.changes[1].id, 2);
	assert_true(r.log.changes[1].address.empty());
	assert_int_equal(r.log.changes[1].port, 0);

	const struct {
		int err;
		uint16_t status;
	} refusals[] = {{-EBUSY, MDR_ST_BUSY}, {-EEXIST, MDR_ST_EXIST}, {-ENOENT, MDR_ST_NOENT},
			{-EINVAL, MDR_ST_INVAL}, {-ENOSPC, MDR_ST_NOSPC}, {-EIO, MDR_ST_IO}};
	uint64_t id = 10;
	for (const auto &x : refusals) {
		r.log.change_error = x.err;
		assert_int_equal(r.call(adm, id++, add), x.status);
	}
	assert_int_equal(r.log.changes.size(), 2 + std::size(refusals));

	// Not leading when the log is asked, or when the dispatch is: the
	// leader named, the second time without asking the log.
	const wire::Leader at{.epoch = 9, .replica = 2, .port = 4791,
			      .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 12}};
	r.log.leader = at;
	r.log.change_error = -EAGAIN;
	r.send(adm, 20, add);
	m = r.one(adm);
	assert_int_equal(status_of(m), MDR_ST_NOT_LEADER);
	assert_true(*std::get<wire::ErrorRep>(m.body).leader == at);
	const size_t asked = r.log.changes.size();
	r.log.accept = false;
	r.send(adm, 21, wire::ReplicaRemoveReq{.id = 3});
	m = r.one(adm);
	assert_int_equal(status_of(m), MDR_ST_NOT_LEADER);
	assert_int_equal(std::get<wire::ErrorRep>(m.body).opcode, MDR_OP_REPLICA_REMOVE);
	assert_true(*std::get<wire::ErrorRep>(m.body).leader == at);
	assert_int_equal(r.log.changes.size(), asked);
	r.flush();
	assert_int_equal(r.log.next, 1);

	Rig own;
	assert_int_equal(own.call(own.admin(), 1, add), MDR_ST_INVAL);
	assert_int_equal(own.call(own.admin(), 2, wire::ReplicaRemoveReq{.id = 2}), MDR_ST_INVAL);
	assert_int_equal(own.call(own.admin(false), 3, add), MDR_ST_PERM);
	assert_int_equal(r.call(r.admin(false), 22, add), MDR_ST_PERM);
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_change_answered_at_commit),
		cmocka_unit_test(test_abandoned_changes),
		cmocka_unit_test(test_follower_refuses),
		cmocka_unit_test(test_follower_names_the_leader),
		cmocka_unit_test(test_group_status),
		cmocka_unit_test(test_replica_changes),
		cmocka_unit_test(test_new_leader_waits_out_old_leases),
		cmocka_unit_test(test_new_leader_allocates_once_holders_reopened),
		cmocka_unit_test(test_stop_serving_hosts),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
