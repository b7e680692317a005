// SPDX-License-Identifier: GPL-2.0
//
// repl_conn.cc - see repl_conn.h.
#include "mdnode/repl_conn.h"

#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>

#include "mdnode/records.h"

namespace mdnode::repl {

namespace {

enum Kind : uint16_t { kReq = 1, kAcc = 2, kRej = 3, kProbe = 4 };

// The smallest control message: a header alone (LOG_STATE_REQ).
constexpr uint32_t kMinControl = 16;

std::string num(uint64_t v) { return std::to_string(v); }

std::vector<std::byte> take(Writer &w)
{
	std::vector<uint8_t> v = w.take();
	std::vector<std::byte> out(v.size());

	std::memcpy(out.data(), v.data(), v.size());
	return out;
}

Writer header(Kind kind)
{
	Writer w;

	w.le32(kConnMagic).le16(kFormatVersion).le16(kind);
	return w;
}

mdr::Error bad(int err, const char *what, const std::string &why)
{
	return mdr::Error(err, std::string("replication ") + what + ": " + why);
}

// A message: its header checked (fewer bytes than want, or another magic,
// version or kind, is an error here), then read(Reader at offset 8) reads
// and checks the rest.
template <typename T, typename Read>
mdr::Result<T> parse(std::span<const std::byte> bytes, size_t want, Kind kind, const char *what,
		     Read read)
{
	Reader r({reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()});

	if (bytes.size() < want)
		return bad(-EMSGSIZE, what, num(bytes.size()) + " bytes, not " + num(want));
	if (uint32_t m = r.le32(); m != kConnMagic)
		return bad(-EINVAL, what, "magic " + num(m));
	if (uint16_t v = r.le16(); v != kFormatVersion)
		return bad(-EPROTONOSUPPORT, what, "format version " + num(v));
	if (uint16_t k = r.le16(); k != kind)
		return bad(-EINVAL, what, "kind " + num(k));
	return read(r);
}

} // namespace

const char *reject_name(uint16_t reason)
{
	static const char *const names[] = {
		nullptr, "stale epoch", "busy", "invalid request", "ring out of bounds",
		"another group", "failed", "no resources", "probe answered",
	};

	return reason < std::size(names) && names[reason] ? names[reason] : "unknown";
}

std::vector<std::byte> encode_conn_req(const ConnReq &r)
{
	Writer w = header(kReq);

	w.le64(r.group).le64(r.epoch).le32(r.leader_id).le32(r.max_batch_bytes);
	w.le64(r.ring_bytes).le64(0);
	return take(w);
}

std::vector<std::byte> encode_conn_acc(const ConnAcc &a)
{
	Writer w = header(kAcc);

	w.le64(a.log.epoch).le64(a.ring_addr).le32(a.ring_rkey).le32(a.follower_id);
	w.le64(a.ring_bytes).le64(a.log.last.epoch).le64(a.log.last.index);
	w.le64(a.log.durable_index).le64(a.log.fenced_epoch).le64(a.features);
	return take(w);
}

std::vector<std::byte> encode_conn_rej(const ConnRej &r)
{
	Writer w = header(kRej);

	w.le16(r.reason).le16(0).le32(0).le64(r.fenced_epoch);
	return take(w);
}

std::vector<std::byte> encode_conn_probe(uint64_t group)
{
	Writer w = header(kProbe);

	w.le64(group);
	return take(w);
}

bool is_conn_probe(std::span<const std::byte> bytes)
{
	return parse<bool>(bytes, kConnProbeBytes, kProbe, "probe",
			   [](Reader &) -> mdr::Result<bool> { return true; })
		.ok();
}

// Each field is read in its order: an initializer list runs left to right.
mdr::Result<ConnReq> parse_conn_req(std::span<const std::byte> bytes)
{
	return parse<ConnReq>(bytes, kConnReqBytes, kReq, "request",
			      [](Reader &in) -> mdr::Result<ConnReq> {
		const ConnReq q{.group = in.le64(), .epoch = in.le64(), .leader_id = in.le32(),
				.max_batch_bytes = in.le32(), .ring_bytes = in.le64()};
		const char *why = in.le64() ? "reserved bytes not 0"
				  : q.epoch == 0 ? "epoch 0"
				  : q.leader_id == 0 ? "leader id 0" : nullptr;

		if (why)
			return bad(-EINVAL, "request", why);
		if (mdr::Status ok = check_ring(q.ring_bytes, q.max_batch_bytes); !ok.ok())
			return bad(-EINVAL, "request", ok.message());
		return q;
	});
}

mdr::Result<ConnAcc> parse_conn_acc(std::span<const std::byte> bytes)
{
	return parse<ConnAcc>(bytes, kConnAccBytes, kAcc, "accept",
			      [](Reader &in) -> mdr::Result<ConnAcc> {
		const uint64_t epoch = in.le64();
		ConnAcc a{.ring_addr = in.le64(), .ring_rkey = in.le32(),
			  .follower_id = in.le32(), .ring_bytes = in.le64(), .log = {}};

		a.log = {.epoch = epoch, .last = {in.le64(), in.le64()},
			 .durable_index = in.le64(), .fenced_epoch = in.le64()};
		// An accept of 72 bytes is of a release before features.
		a.features = in.left() >= 8 ? in.le64() : 0;
		const mdr::Status ok = check_log_state(a.log);

		// Epoch 0 named as such, before check_log_state() finds the
		// fenced epoch above it.
		if (epoch == 0 || a.follower_id == 0 || !ok.ok())
			return bad(-EINVAL, "accept", epoch == 0 ? "epoch 0"
					       : a.follower_id == 0 ? "follower id 0"
					       : ok.message());
		return a;
	});
}

mdr::Result<ConnRej> parse_conn_rej(std::span<const std::byte> bytes)
{
	return parse<ConnRej>(bytes, kConnRejBytes, kRej, "reject",
			      [](Reader &in) -> mdr::Result<ConnRej> {
		const uint16_t reason = in.le16();
		const bool reserved = in.le16() != 0;
		const bool reserved_too = in.le32() != 0;
		const ConnRej j{.reason = reason, .fenced_epoch = in.le64()};

		if (reserved || reserved_too)
			return bad(-EINVAL, "reject", "reserved bytes not 0");
		if (j.reason < kRejStale || j.reason > kRejProbe)
			return bad(-EINVAL, "reject", "reason " + num(j.reason));
		if (j.reason == kRejStale && j.fenced_epoch == 0)
			return bad(-EINVAL, "reject", "stale, fenced to epoch 0");
		return j;
	});
}

mdr::Status check_accept(const ConnReq &asked, const ConnAcc &got)
{
	auto differs = [](const std::string &why) {
		return mdr::Error(-EPROTO, "replication accept: " + why);
	};

	if (got.log.epoch != asked.epoch)
		return differs("epoch " + num(got.log.epoch) + ", asked " + num(asked.epoch));
	if (got.log.fenced_epoch != asked.epoch)
		return differs("fenced to epoch " + num(got.log.fenced_epoch) + " accepting epoch " +
			       num(asked.epoch));
	if (got.ring_bytes != asked.ring_bytes)
		return differs("a ring of " + num(got.ring_bytes) + " bytes, asked " +
			       num(asked.ring_bytes));
	if (got.ring_addr == 0 || got.ring_addr + got.ring_bytes < got.ring_addr)
		return differs("a ring at " + num(got.ring_addr) + " of " + num(got.ring_bytes) +
			       " bytes");
	if (got.log.last.epoch > asked.epoch)
		return differs("a log of epoch " + num(got.log.last.epoch) + " in epoch " +
			       num(asked.epoch));
	return {};
}

Admission admit(const ConnReq &r, const FollowerBounds &b, uint64_t fenced_epoch, bool settled)
{
	if (r.group != b.group)
		return {kRejGroup, false};
	if (r.epoch < fenced_epoch)
		return {kRejStale, false};
	if (r.ring_bytes > b.max_ring_bytes || !check_ring(r.ring_bytes, r.max_batch_bytes).ok())
		return {kRejRing, false};
	if (!settled)
		return {kRejBusy, false};
	return {0, r.epoch > fenced_epoch};
}

mdr::Result<Received> classify_receive(bool with_imm, bool has_imm, uint32_t imm,
				       uint32_t byte_len, uint64_t ring_bytes,
				       uint32_t max_control)
{
	auto refuse = [](const std::string &why) {
		return mdr::Error(-EPROTO, "replication receive: " + why);
	};

	if (with_imm) {
		if (!has_imm)
			return refuse("a WRITE with immediate without immediate data");
		if (imm % kAlign || imm >= ring_bytes)
			return refuse("a notify at " + num(imm) + " in a ring of " + num(ring_bytes) +
				      " bytes");
		// The entry's bytes with it: the WRITE put them at imm.
		if (byte_len > ring_bytes - imm)
			return refuse("a notify at " + num(imm) + " carrying " + num(byte_len) +
				      " bytes in a ring of " + num(ring_bytes));
		return Received{Notify{imm}};
	}
	if (has_imm)
		return refuse("a SEND with immediate data");
	if (byte_len < kMinControl || byte_len > max_control)
		return refuse("a control message of " + num(byte_len) + " bytes");
	return Received{ControlBytes{byte_len}};
}

} // namespace mdnode::repl
