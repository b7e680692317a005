// SPDX-License-Identifier: GPL-2.0
//
// repl_conn.cc - see repl_conn.h.
#include "mdnode/repl_conn.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "mdnode/records.h"

namespace mdnode::repl {

namespace {

enum Kind : uint16_t { kReq = 1, kAcc = 2, kRej = 3 };

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

// The common header, checked; r is left at offset 8.
mdr::Status check_header(Reader &r, std::span<const std::byte> bytes, size_t want, Kind kind,
			 const char *what)
{
	if (bytes.size() < want)
		return bad(-EMSGSIZE, what, num(bytes.size()) + " bytes, not " + num(want));
	if (uint32_t m = r.le32(); m != kConnMagic)
		return bad(-EINVAL, what, "magic " + num(m));
	if (uint16_t v = r.le16(); v != kFormatVersion)
		return bad(-EPROTONOSUPPORT, what, "format version " + num(v));
	if (uint16_t k = r.le16(); k != kind)
		return bad(-EINVAL, what, "kind " + num(k));
	return {};
}

Reader reader(std::span<const std::byte> bytes)
{
	return Reader({reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()});
}

} // namespace

const char *reject_name(uint16_t reason)
{
	switch (reason) {
	case kRejStale:
		return "stale epoch";
	case kRejBusy:
		return "busy";
	case kRejInvalid:
		return "invalid request";
	case kRejRing:
		return "ring out of bounds";
	case kRejGroup:
		return "another group";
	case kRejFailed:
		return "failed";
	case kRejNoMem:
		return "no resources";
	}
	return "unknown";
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

	w.le64(a.epoch).le64(a.ring_addr).le32(a.ring_rkey).le32(a.follower_id);
	w.le64(a.ring_bytes).le64(a.last.epoch).le64(a.last.index);
	w.le64(a.durable_index).le64(a.fenced_epoch);
	return take(w);
}

std::vector<std::byte> encode_conn_rej(const ConnRej &r)
{
	Writer w = header(kRej);

	w.le16(r.reason).le16(0).le32(0).le64(r.fenced_epoch);
	return take(w);
}

mdr::Result<ConnReq> parse_conn_req(std::span<const std::byte> bytes)
{
	const char *what = "request";
	Reader r = reader(bytes);

	if (mdr::Status ok = check_header(r, bytes, kConnReqBytes, kReq, what); !ok.ok())
		return mdr::Error(ok.error(), ok.message());

	ConnReq q;

	q.group = r.le64();
	q.epoch = r.le64();
	q.leader_id = r.le32();
	q.max_batch_bytes = r.le32();
	q.ring_bytes = r.le64();
	if (uint64_t reserved = r.le64(); reserved)
		return bad(-EINVAL, what, "reserved " + num(reserved));
	if (q.epoch == 0)
		return bad(-EINVAL, what, "epoch 0");
	if (q.leader_id == 0)
		return bad(-EINVAL, what, "leader id 0");
	if (mdr::Status ok = check_ring(q.ring_bytes, q.max_batch_bytes); !ok.ok())
		return bad(-EINVAL, what, ok.message());
	return q;
}

mdr::Result<ConnAcc> parse_conn_acc(std::span<const std::byte> bytes)
{
	const char *what = "accept";
	Reader r = reader(bytes);

	if (mdr::Status ok = check_header(r, bytes, kConnAccBytes, kAcc, what); !ok.ok())
		return mdr::Error(ok.error(), ok.message());

	ConnAcc a;

	a.epoch = r.le64();
	a.ring_addr = r.le64();
	a.ring_rkey = r.le32();
	a.follower_id = r.le32();
	a.ring_bytes = r.le64();
	a.last.epoch = r.le64();
	a.last.index = r.le64();
	a.durable_index = r.le64();
	a.fenced_epoch = r.le64();
	if (a.epoch == 0)
		return bad(-EINVAL, what, "epoch 0");
	if (a.follower_id == 0)
		return bad(-EINVAL, what, "follower id 0");
	if (mdr::Status ok = check_log_state({a.epoch, a.last, a.durable_index, a.fenced_epoch});
	    !ok.ok())
		return bad(-EINVAL, what, ok.message());
	return a;
}

mdr::Result<ConnRej> parse_conn_rej(std::span<const std::byte> bytes)
{
	const char *what = "reject";
	Reader r = reader(bytes);

	if (mdr::Status ok = check_header(r, bytes, kConnRejBytes, kRej, what); !ok.ok())
		return mdr::Error(ok.error(), ok.message());

	ConnRej j;

	j.reason = r.le16();
	const uint16_t res16 = r.le16();
	const uint32_t res32 = r.le32();

	j.fenced_epoch = r.le64();
	if (res16 || res32)
		return bad(-EINVAL, what, "reserved bytes not 0");
	if (j.reason < kRejStale || j.reason > kRejNoMem)
		return bad(-EINVAL, what, "reason " + num(j.reason));
	if (j.reason == kRejStale && j.fenced_epoch == 0)
		return bad(-EINVAL, what, "stale, fenced to epoch 0");
	return j;
}

mdr::Status check_accept(const ConnReq &asked, const ConnAcc &got)
{
	auto differs = [](const std::string &why) {
		return mdr::Error(-EPROTO, "replication accept: " + why);
	};

	if (got.epoch != asked.epoch)
		return differs("epoch " + num(got.epoch) + ", asked " + num(asked.epoch));
	if (got.fenced_epoch != asked.epoch)
		return differs("fenced to epoch " + num(got.fenced_epoch) + " accepting epoch " +
			       num(asked.epoch));
	if (got.ring_bytes != asked.ring_bytes)
		return differs("a ring of " + num(got.ring_bytes) + " bytes, asked " +
			       num(asked.ring_bytes));
	if (got.ring_addr == 0 || got.ring_addr + got.ring_bytes < got.ring_addr)
		return differs("a ring at " + num(got.ring_addr) + " of " + num(got.ring_bytes) +
			       " bytes");
	if (got.last.epoch > asked.epoch)
		return differs("a log of epoch " + num(got.last.epoch) + " in epoch " +
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
		if (byte_len)
			return refuse("a notify carrying " + num(byte_len) + " bytes");
		if (imm % kAlign || imm >= ring_bytes)
			return refuse("a notify at " + num(imm) + " in a ring of " + num(ring_bytes) +
				      " bytes");
		return Received{Notify{imm}};
	}
	if (has_imm)
		return refuse("a SEND with immediate data");
	if (byte_len < kMinControl || byte_len > max_control)
		return refuse("a control message of " + num(byte_len) + " bytes");
	return Received{ControlBytes{byte_len}};
}

} // namespace mdnode::repl
