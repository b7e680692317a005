// SPDX-License-Identifier: GPL-2.0
//
// test_wire_conn.cc - connection private data (connect request, accept,
// reject), version negotiation, track granules, which opcodes need which
// proof, and the translation of status codes to and from errno.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "lib/wire/wire.h"

#include "tests/test_wire.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;

// ---- Connection private data ----------------------------------------------

template <typename T>
Buf padded(const T &t, size_t len)
{
	Buf b(len);

	std::memcpy(b.data(), &t, sizeof(t));
	return b;
}

// One field of valid private data made wrong, and what its parser answers.
struct Row {
	const char *what;
	Mutation mutate;
	int err;
	const char *part;
};

// Each row's mutation of @good, given to @parse, is refused as the row says.
template <typename Parse>
void check_rows(std::span<const Row> rows, const Buf &good, Parse parse)
{
	for (const Row &r : rows) {
		Buf b = good;
		r.mutate(b);
		auto q = parse(b);
		if (q.ok())
			fail_msg("%s: accepted", r.what);
		if (q.error() != r.err || !contains(q.message(), r.part))
			fail_msg("%s: got %d \"%s\"", r.what, q.error(), q.message().c_str());
	}
}

void test_conn_req(void **)
{
	for (const w::ConnReq &q : {host_req(), admin_req()}) {
		auto wire = w::encode_conn_req(q);
		assert_true(wire.ok());
		// rdma_cm hands a REQ's private data over as 56 bytes
		auto back = w::parse_conn_req(padded(wire.value(), 56));
		assert_true(back.ok());
		assert_true(back.value() == q);
		// every shorter length is malformed
		const Buf full = padded(wire.value(), 56);
		for (size_t n = 0; n < sizeof(mdr_wire_conn_req); n++) {
			auto r = w::parse_conn_req(std::span(full).first(n));
			assert_false(r.ok());
			assert_int_equal(r.error(), -EPROTO);
		}
	}

	const Row rows[] = {
		{"magic", set32(0, 0x4d445257), -EPROTO, "conn_req: bad magic 0x4d445257"},
		{"version min zero", set16(4, 0), -EINVAL, "version range 0..1 not sane"},
		{"versions reversed", set16(4, 2), -EINVAL, "version range 2..1 not sane"},
		{"role zero", set16(8, 0), -EINVAL, "conn_req: unknown role 0"},
		{"role three", set16(8, 3), -EINVAL, "unknown role 3"},
		{"flags", set16(10, 1), -EINVAL, "conn_req: flags not zero"},
		{"reserved first", set8(32, 1), -EINVAL, "conn_req: reserved not zero"},
		{"reserved last", set8(55, 1), -EINVAL, "reserved not zero"},
		{"queue_depth zero", set16(24, 0), -EINVAL, "conn_req: queue_depth zero"},
		{"recv_depth equal", set16(26, 32), -EINVAL,
		 "conn_req: recv_depth 32 not above queue_depth 32"},
		{"recv_depth below", set16(26, 1), -EINVAL, "recv_depth 1 not above"},
		{"max_msg small", set32(28, MDR_WIRE_MSG_MIN - 1), -EINVAL,
		 "conn_req: max_msg 255 outside [256, 65536]"},
		{"max_msg large", set32(28, MDR_WIRE_MSG_MAX + 1), -EINVAL, "max_msg 65537 outside"},
		{"admin with tenant", [](Buf &b) { put16(b, 8, MDR_ROLE_ADMIN); }, -EINVAL,
		 "conn_req: tenant 9 on an admin connection"},
	};
	static_assert(offsetof(mdr_wire_conn_req, queue_depth) == 24);
	static_assert(offsetof(mdr_wire_conn_req, reserved) == 32);

	check_rows(rows, padded(w::encode_conn_req(host_req()).value(), 56),
		   [](const Buf &b) { return w::parse_conn_req(b); });

	// The encoder refuses the same.
	w::ConnReq bad = host_req();
	bad.recv_depth = bad.queue_depth;
	assert_int_equal(w::encode_conn_req(bad).error(), -EINVAL);
	bad = admin_req();
	bad.tenant = 1;
	assert_int_equal(w::encode_conn_req(bad).error(), -EINVAL);
}

void test_negotiate_version(void **)
{
	static_assert(MDR_WIRE_VERSION_MIN == 1 && MDR_WIRE_VERSION == 7,
		      "update the cases for a new version");
	assert_int_equal(w::negotiate_version(1, 1).value(), 1);
	assert_int_equal(w::negotiate_version(1, 2).value(), 2);
	assert_int_equal(w::negotiate_version(2, 2).value(), 2);
	assert_int_equal(w::negotiate_version(3, 3).value(), 3);
	assert_int_equal(w::negotiate_version(1, 3).value(), 3);
	assert_int_equal(w::negotiate_version(4, 4).value(), 4);
	assert_int_equal(w::negotiate_version(1, 4).value(), 4);
	assert_int_equal(w::negotiate_version(5, 5).value(), 5);
	assert_int_equal(w::negotiate_version(1, 5).value(), 5);
	assert_int_equal(w::negotiate_version(6, 6).value(), 6);
	assert_int_equal(w::negotiate_version(1, 6).value(), 6);
	assert_int_equal(w::negotiate_version(7, 7).value(), 7);
	assert_int_equal(w::negotiate_version(1, 9).value(), 7);
	assert_int_equal(w::negotiate_version(2, 9).value(), 7);
	assert_int_equal(w::negotiate_version(0, 1).value(), 1);

	const std::pair<uint16_t, uint16_t> none[] = {
		{8, 9}, {0, 0}, {3, 1}, {UINT16_MAX, UINT16_MAX}};

	for (const auto &[lo, hi] : none) {
		auto v = w::negotiate_version(lo, hi);
		assert_false(v.ok());
		assert_int_equal(v.error(), -EPROTONOSUPPORT);
		assert_int_equal(w::errno_to_status(v.error()), MDR_ST_VERSION);
	}
}

// A granule is 1/64th of the extent, but at least 4 KiB.
void test_track_granules(void **)
{
	const struct {
		uint32_t extent_shift;
		unsigned shift, granules;
	} cases[] = {
		{MDR_WIRE_EXTENT_SHIFT_MIN, 12, 16},
		{17, 12, 32},
		{18, 12, 64},
		{20, 14, 64},
		{MDR_WIRE_EXTENT_SHIFT_DEFAULT, 16, 64},
		{MDR_WIRE_EXTENT_SHIFT_MAX, 24, 64},
	};

	for (const auto &c : cases) {
		assert_int_equal(w::track_granule_shift(c.extent_shift), c.shift);
		assert_int_equal(w::track_granules(c.extent_shift), c.granules);
	}
}

w::ConnRep host_rep()
{
	return {.version = 1, .queue_depth = 16, .push_credits = 32,
		.max_msg = 8192, .node_id = 5, .boot_id = 0xb007};
}

w::ConnRep admin_rep()
{
	w::ConnRep a{.version = 1, .queue_depth = 1, .push_credits = 0,
		     .max_msg = MDR_WIRE_MSG_MAX, .node_id = 5, .boot_id = 0xb007};
	for (size_t i = 0; i < a.nonce.size(); i++)
		a.nonce[i] = static_cast<uint8_t>(0xa0 + i);
	return a;
}

void test_conn_rep(void **)
{
	const std::pair<w::ConnRep, w::ConnReq> pairs[] = {
		{host_rep(), host_req()}, {admin_rep(), admin_req()}};

	for (const auto &[rep, req] : pairs) {
		auto wire = w::encode_conn_rep(rep, req);
		assert_true(wire.ok());
		// an accept's private data arrives padded to 196 bytes
		auto back = w::parse_conn_rep(padded(wire.value(), 196), req);
		assert_true(back.ok());
		assert_true(back.value() == rep);
		const Buf full = padded(wire.value(), 196);
		for (size_t n = 0; n < sizeof(mdr_wire_conn_rep); n++)
			assert_int_equal(w::parse_conn_rep(std::span(full).first(n), req).error(),
					 -EPROTO);
	}

	// host_req: queue_depth 32, recv_depth 48; host_rep grants 16 + 32.
	const Row rows[] = {
		{"magic", set32(0, 0), -EPROTO, "conn_rep: bad magic 0x0"},
		{"version zero", set16(4, 0), -EPROTO, "conn_rep: version 0 outside the 1..1 asked"},
		{"version above", set16(4, 2), -EPROTO, "version 2 outside"},
		{"flags", set16(6, 4), -EINVAL, "conn_rep: flags not zero"},
		{"queue_depth zero", set16(8, 0), -EINVAL, "conn_rep: queue_depth 0 outside [1, 32]"},
		{"queue_depth above asked", set16(8, 33), -EINVAL, "queue_depth 33 outside [1, 32]"},
		{"push credits too many", set16(10, 33), -EINVAL,
		 "conn_rep: push_credits 33 exceed recv_depth 48 - queue_depth 16"},
		{"push credits none", set16(10, 0), -EINVAL,
		 "conn_rep: no push credits on a host connection"},
		{"max_msg small", set32(12, 100), -EINVAL, "conn_rep: max_msg 100 outside"},
		{"max_msg large", set32(12, 1u << 20), -EINVAL, "max_msg 1048576 outside"},
		{"nonce on host", set8(47, 1), -EINVAL, "conn_rep: nonce on a host connection"},
	};
	static_assert(offsetof(mdr_wire_conn_rep, nonce) == 32);

	check_rows(rows, padded(w::encode_conn_rep(host_rep(), host_req()).value(), 196),
		   [](const Buf &b) { return w::parse_conn_rep(b, host_req()); });

	// Exactly the credits the client's buffers hold.
	w::ConnRep edge = host_rep();
	edge.push_credits = 48 - 16;
	assert_true(w::encode_conn_rep(edge, host_req()).ok());

	w::ConnRep no_nonce = admin_rep();
	no_nonce.nonce.fill(0);
	auto r = w::encode_conn_rep(no_nonce, admin_req());
	assert_false(r.ok());
	assert_true(contains(r.message(), "conn_rep: no nonce on an admin connection"));
}

// Host accepts carry the challenge of MDR_OP_HOST_AUTH from version 3 on,
// and none before.
void test_conn_rep_host_nonce(void **)
{
	w::ConnReq req = host_req();
	req.version_max = 3;
	w::ConnRep rep = host_rep();
	for (size_t i = 0; i < rep.nonce.size(); i++)
		rep.nonce[i] = static_cast<uint8_t>(i);

	for (uint16_t v = 1; v <= 3; v++) {
		rep.version = v;
		auto wire = w::encode_conn_rep(rep, req);
		assert_int_equal(wire.ok(), v >= w::kHostAuthVersion);
		if (v < w::kHostAuthVersion)
			assert_true(contains(wire.message(), "nonce on a host connection of version"));
		w::ConnRep zero = rep;
		zero.nonce.fill(0);
		auto z = w::encode_conn_rep(zero, req);
		assert_true(z.ok());
		assert_true(w::parse_conn_rep(padded(z.value(), 196), req).value() == zero);
	}
	rep.version = 3;
	auto back = w::parse_conn_rep(padded(w::encode_conn_rep(rep, req).value(), 196), req);
	assert_true(back.ok());
	assert_true(back.value().nonce == rep.nonce);
}

// The opcode table says what needs which proof.
void test_needs_auth(void **)
{
	const uint16_t host_ops[] = {MDR_OP_OPEN, MDR_OP_CLOSE, MDR_OP_RENEW, MDR_OP_ALLOC,
				     MDR_OP_INVALIDATE};
	for (uint16_t op : host_ops) {
		assert_true(w::needs_host_auth(op, 3));
		assert_false(w::needs_host_auth(op, 2));
		assert_false(w::needs_host_auth(op, 1));
		assert_false(w::needs_auth(op));
	}
	assert_false(w::needs_host_auth(MDR_OP_HOST_AUTH, 3));
	assert_false(w::needs_host_auth(MDR_OP_PING, 3));
	assert_false(w::needs_auth(MDR_OP_HOST_AUTH));
	for (uint16_t op : {MDR_OP_HOST_ADD, MDR_OP_HOST_REMOVE, MDR_OP_HOST_LIST,
			    MDR_OP_VOL_CREATE}) {
		assert_true(w::needs_auth(op));
		assert_false(w::needs_host_auth(op, 3));
	}
	assert_false(w::needs_auth(MDR_OP_AUTH));
	assert_false(w::needs_host_auth(0x7777, 3));
	// Roles: HOST_AUTH on an admin connection, HOST_ADD on a host one.
	Buf b = encode(w::HostRemoveReq{.host_id = 1});
	assert_int_equal(w::parse(b, Side::node, MDR_ROLE_HOST).error(), -EPERM);
	w::HostAuthReq a;
	a.nonce[3] = 1;
	b = encode(a);
	assert_int_equal(w::parse(b, Side::node, MDR_ROLE_ADMIN).error(), -EPERM);
	assert_true(w::parse(b, Side::node, MDR_ROLE_HOST).ok());
}

void test_conn_rej(void **)
{
	for (uint16_t st = MDR_ST_INVAL; st < MDR_ST_MAX; st++) {
		auto wire = w::encode_conn_rej({.version = 1, .status = st});
		assert_true(wire.ok());
		// a reject's private data arrives padded to 148 bytes
		auto back = w::parse_conn_rej(padded(wire.value(), 148));
		assert_true(back.ok());
		assert_int_equal(back.value().status, st);
		assert_int_equal(back.value().version, 1);
	}
	const mdr_wire_conn_rej good = w::encode_conn_rej({}).value();
	const Buf full = padded(good, 148);
	for (size_t n = 0; n < sizeof(good); n++)
		assert_int_equal(w::parse_conn_rej(std::span(full).first(n)).error(), -EPROTO);

	Buf b = padded(good, 148);
	put32(b, 0, 0x12345678);
	assert_int_equal(w::parse_conn_rej(b).error(), -EPROTO);

	for (uint16_t st : {uint16_t{MDR_ST_OK}, uint16_t{MDR_ST_MAX}, uint16_t{0xffff}}) {
		b = padded(good, 148);
		put16(b, 6, st);
		auto r = w::parse_conn_rej(b);
		assert_int_equal(r.error(), -EINVAL);
		assert_true(contains(r.message(), "is no reason to reject"));
		assert_false(w::encode_conn_rej({.version = 1, .status = st}).ok());
	}
	b = padded(good, 148);
	put16(b, 4, 0);
	put16(b, 6, MDR_ST_VERSION);
	assert_int_equal(w::parse_conn_rej(b).error(), -EINVAL);
}

// ---- Status ---------------------------------------------------------------

void test_status_errno(void **)
{
	const struct {
		uint16_t status;
		int err;
		const char *name;
	} table[] = {
		{MDR_ST_OK, 0, "MDR_ST_OK"},
		{MDR_ST_INVAL, -EINVAL, "MDR_ST_INVAL"},
		{MDR_ST_NOENT, -ENOENT, "MDR_ST_NOENT"},
		{MDR_ST_EXIST, -EEXIST, "MDR_ST_EXIST"},
		{MDR_ST_NOSPC, -ENOSPC, "MDR_ST_NOSPC"},
		{MDR_ST_PERM, -EPERM, "MDR_ST_PERM"},
		{MDR_ST_BUSY, -EBUSY, "MDR_ST_BUSY"},
		{MDR_ST_PROTO, -EPROTO, "MDR_ST_PROTO"},
		{MDR_ST_VERSION, -EPROTONOSUPPORT, "MDR_ST_VERSION"},
		{MDR_ST_STALE, -ESTALE, "MDR_ST_STALE"},
		{MDR_ST_AGAIN, -EAGAIN, "MDR_ST_AGAIN"},
		{MDR_ST_IO, -EIO, "MDR_ST_IO"},
		{MDR_ST_NOMEM, -ENOMEM, "MDR_ST_NOMEM"},
		// EAGAIN stays AGAIN's: only a replica's answer says NOT_LEADER.
		{MDR_ST_NOT_LEADER, -EAGAIN, "MDR_ST_NOT_LEADER"},
	};
	static_assert(std::size(table) == MDR_ST_MAX);

	for (const auto &t : table) {
		const uint16_t back = t.status == MDR_ST_NOT_LEADER ? uint16_t{MDR_ST_AGAIN} : t.status;

		assert_int_equal(w::status_to_errno(t.status), t.err);
		assert_int_equal(w::errno_to_status(t.err), back);
		assert_int_equal(w::errno_to_status(-t.err), back);	// positive
		assert_string_equal(w::status_name(t.status).c_str(), t.name);
	}
	assert_int_equal(w::status_to_errno(MDR_ST_MAX), -EPROTO);
	assert_int_equal(w::status_to_errno(0xffff), -EPROTO);
	assert_string_equal(w::status_name(MDR_ST_MAX).c_str(), "MDR_ST_?14");
	assert_int_equal(w::errno_to_status(-EACCES), MDR_ST_PERM);
	assert_int_equal(w::errno_to_status(-EDQUOT), MDR_ST_NOSPC);
	assert_int_equal(w::errno_to_status(-EMSGSIZE), MDR_ST_PROTO);
	assert_int_equal(w::errno_to_status(-EXDEV), MDR_ST_IO);	// no status of its own
	assert_int_equal(w::errno_to_status(-4095), MDR_ST_IO);

	assert_string_equal(w::opcode_name(MDR_OP_VOL_CREATE).c_str(), "MDR_OP_VOL_CREATE");
	assert_string_equal(w::opcode_name(0x99).c_str(), "MDR_OP_?153");
	assert_true(w::valid_volume_name("A-z_0.9"));
	assert_true(w::valid_volume_name(std::string(63, 'x')));
	assert_false(w::valid_volume_name(std::string(64, 'x')));
	assert_false(w::valid_volume_name(""));
	assert_false(w::valid_volume_name("a/b"));
	assert_false(w::valid_volume_name(std::string("a\0b", 3)));
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn_req),
		cmocka_unit_test(test_negotiate_version),
		cmocka_unit_test(test_track_granules),
		cmocka_unit_test(test_conn_rep),
		cmocka_unit_test(test_conn_rep_host_nonce),
		cmocka_unit_test(test_needs_auth),
		cmocka_unit_test(test_conn_rej),
		cmocka_unit_test(test_status_errno),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
